"""The paper's two ImageNet training set-ups (App. F.3, Table 20) as named recipes.

* ``90ep`` — SGD with momentum 0.9, learning rate ``0.1 * B / 256`` reached by a linear warm-up
  over 5 epochs then cosine decay, L2 1e-4 on the kernels, label smoothing 0.1, an exponential
  moving average of the weights (0.9999) and batch-norm decay 0.9999, as stated in App. F.3.
* ``350ep`` — the same with L2 4e-5, RandAugment (2 ops) and the dropout and stochastic depth rates
  of Table 20 for the model's depth and image size, read from the zoo registry's metadata
  ([`lambda_keras.zoo.ModelInfo.table20_row`][lambda_keras.zoo.ModelInfo.table20_row]).

Runs shorter than the averages themselves (0.9999 averages over ~10,000 steps; the digits demo
has 660) cannot use them: there the weight EMA and batch-norm decays are capped at
``1 - 10 / total_steps``, an average over the last tenth of the run (reported by
[`describe`][lambda_keras.training.classification.recipes.describe]; with a cap of half the run the
demo's accuracy
fell from 98.6% to 35%, the averages lagging behind the weights). Runs at least as long as the
average, such as the paper's (90 ImageNet epochs at batch 4096: 28,080 steps), keep the stated
values.
"""

from __future__ import annotations

import dataclasses

import keras

from lambda_keras.layers import LambdaLayer
from lambda_keras.layers.model_layers import all_layers
from lambda_keras.zoo.registry import ModelInfo

__all__ = ["RECIPES", "Recipe", "all_layers"]

# RandAugment magnitude of the 350ep recipe for models outside Table 20 (the vanilla ResNet-50
# and the MobileNets): Table 20's smallest, the one of its depth-50 rows.
OUTSIDE_TABLE20_RANDAUGMENT_MAGNITUDE = 10


@dataclasses.dataclass(frozen=True)
class Recipe:
    """A training set-up. Learning rate: ``base_learning_rate * global_batch / 256``."""

    name: str
    epochs: int
    base_learning_rate: float = 0.1
    warmup_epochs: int = 5
    momentum: float = 0.9
    l2: float = 1e-4
    label_smoothing: float = 0.1
    ema_momentum: float = 0.9999
    batch_norm_momentum: float = 0.9999
    table20: bool = False  # RandAugment, dropout and stochastic depth from Table 20 (350ep)

    def learning_rate(self, global_batch_size: int) -> float:
        return self.base_learning_rate * global_batch_size / 256

    def optimizer(
        self, global_batch_size: int, steps_per_epoch: int, epochs: int | None = None
    ) -> keras.optimizers.Optimizer:
        """SGD + momentum, warm-up then cosine decay, weight EMA (capped for short runs)."""
        epochs = epochs or self.epochs
        total = max(1, steps_per_epoch * epochs)
        warmup = min(self.warmup_epochs * steps_per_epoch, total // 2)
        schedule = keras.optimizers.schedules.CosineDecay(
            initial_learning_rate=0.0,
            decay_steps=max(1, total - warmup),
            warmup_target=self.learning_rate(global_batch_size),
            warmup_steps=warmup,
        )
        return keras.optimizers.SGD(
            learning_rate=schedule,
            momentum=self.momentum,
            use_ema=self.ema_momentum > 0,
            ema_momentum=capped_decay(self.ema_momentum, total),
        )

    def randaugment_magnitude(self, model: ModelInfo, image_size: int) -> int | None:
        """RandAugment magnitude (0..30) for ``model`` at ``image_size``; None: no RandAugment."""
        if not self.table20:
            return None
        row = model.table20_row(image_size)
        return row.randaugment_magnitude if row else OUTSIDE_TABLE20_RANDAUGMENT_MAGNITUDE

    def model_regularization(self, model: ModelInfo, image_size: int) -> dict[str, float]:
        """Builder arguments for the model's dropout and stochastic depth.

        Models in Table 20: its rates (350ep) or none (90ep, App. F.3) — not the builders'
        defaults, which are Table 20's. Other models keep their builders' defaults (``{}``).
        """
        row = model.table20_row(image_size)
        if row is None:
            return {}
        if not self.table20:
            return {"dropout_rate": 0.0, "stochastic_depth_rate": 0.0}
        return {
            "dropout_rate": row.dropout_rate,
            "stochastic_depth_rate": row.stochastic_depth_rate,
        }

    def loss(self) -> keras.losses.Loss:
        return keras.losses.CategoricalCrossentropy(label_smoothing=self.label_smoothing)

    def prepare(self, model: keras.Model, total_steps: int) -> None:
        """L2 on every kernel (convolutions, dense, lambda projections; not the position
        embeddings, biases or batch norms) and the batch-norm decay (capped for short runs)."""
        regularizer = keras.regularizers.L2(self.l2) if self.l2 > 0 else None
        momentum = capped_decay(self.batch_norm_momentum, total_steps)
        for layer in all_layers(model):
            if isinstance(layer, keras.layers.BatchNormalization):
                layer.momentum = momentum
            kernel = getattr(layer, "kernel", None)
            if isinstance(layer, LambdaLayer):
                kernel = layer.qkv_kernel
            elif isinstance(layer, keras.layers.DepthwiseConv2D):
                kernel = layer.depthwise_kernel if kernel is None else kernel
            if kernel is not None and regularizer is not None:
                kernel.regularizer = regularizer


def capped_decay(decay: float, total_steps: int) -> float:
    """``decay`` for runs at least as long as its average (``1 / (1 - decay)`` steps); for
    shorter runs at most ``1 - 10 / total_steps`` (an average over the last tenth)."""
    if decay <= 0 or total_steps * (1.0 - decay) >= 1.0 - 1e-9:
        return decay
    return min(decay, max(0.0, 1.0 - 10.0 / max(total_steps, 1)))


RECIPES = {
    "90ep": Recipe("90ep", epochs=90),
    "350ep": Recipe("350ep", epochs=350, l2=4e-5, table20=True),
}
"""The classification recipes by name: App. F.3's `90ep` and `350ep`."""


def describe(recipe: Recipe, global_batch_size: int, total_steps: int) -> str:
    """One line with the effective hyper-parameters of a run."""
    return (
        f"recipe {recipe.name}: SGD momentum {recipe.momentum}, lr "
        f"{recipe.learning_rate(global_batch_size):g} (batch {global_batch_size}), warm-up "
        f"{recipe.warmup_epochs} epochs, cosine, L2 {recipe.l2:g}, label smoothing "
        f"{recipe.label_smoothing}, weight EMA {capped_decay(recipe.ema_momentum, total_steps):g}"
        f", batch-norm decay {capped_decay(recipe.batch_norm_momentum, total_steps):g}"
    )
