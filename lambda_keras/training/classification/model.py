"""The run's model: the zoo model the config names, with the recipe's regularisation, batch-norm
decay, optimizer and loss."""

from __future__ import annotations

import inspect

import keras

from lambda_keras import zoo
from lambda_keras.layers.model_layers import all_layers
from lambda_keras.training.classification.config import ClassificationConfig
from lambda_keras.training.classification.recipes import Recipe

__all__ = ["build_model", "compiled_model"]


def build_model(config: ClassificationConfig, num_classes: int, recipe: Recipe) -> keras.Model:
    """The zoo model ``config.model`` for ``num_classes`` at ``config.image_size``.

    ``width_multiplier`` reaches builders that take one; dropout and stochastic depth follow
    the recipe and the model's Table 20 rows (``Recipe.model_regularization``).
    """
    info = zoo.model_info(config.model)
    kwargs = {"input_shape": (config.image_size, config.image_size, 3), "classes": num_classes}
    accepts = inspect.signature(info.builder).parameters
    if config.width_multiplier is not None and "width_multiplier" in accepts:
        kwargs["width_multiplier"] = config.width_multiplier
    kwargs.update(recipe.model_regularization(info, config.image_size))
    return info.builder(**kwargs)


def compiled_model(
    config: ClassificationConfig,
    recipe: Recipe,
    num_classes: int,
    steps_per_epoch: int,
    epochs: int,
) -> keras.Model:
    """[`build_model`][lambda_keras.training.classification.model.build_model], prepared and
    compiled by the recipe; call under the placement's variable scope."""
    model = build_model(config, num_classes, recipe)
    recipe.prepare(model, steps_per_epoch * epochs)
    if config.sync_batch_norm and keras.backend.backend() == "jax":
        print(
            "--sync_batch_norm: on JAX the step is one program over all devices, so batch-norm "
            "statistics are over the global batch already"
        )
    elif config.sync_batch_norm:
        for layer in all_layers(model):
            if isinstance(layer, keras.layers.BatchNormalization):
                layer.synchronized = True
    model.compile(
        optimizer=recipe.optimizer(config.batch_size, steps_per_epoch, epochs),
        loss=recipe.loss(),
        # Weighted: the padding data.pad_batches adds for keras.distribution has weight 0.
        weighted_metrics=[
            keras.metrics.CategoricalAccuracy(name="top1"),
            keras.metrics.TopKCategoricalAccuracy(k=5, name="top5"),
        ],
    )
    # The optimizer's slots and weight averages now, not inside the first traced step: a
    # tf.function that creates variables is traced twice (about 10 s more per run measured on
    # the digits demo at width 0.125: 28.7 s -> 18.2 s for one epoch).
    model.optimizer.build(model.trainable_variables)
    return model
