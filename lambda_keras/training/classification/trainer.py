"""One classification run: placement, data, model, recipe, fault-tolerant training, evaluation,
export.

``scripts/train.py`` maps its absl flags onto a
[`ClassificationConfig`][lambda_keras.training.classification.config.ClassificationConfig] and
calls [`train`][lambda_keras.training.classification.trainer.train]. Keras runs on TensorFlow
(``tf.distribute`` strategies), JAX (``keras.distribution``, the TPU path) or PyTorch (one
device); the input pipeline is ``tf.data`` on all three.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import time

import keras

from lambda_keras.backend.compile_report import CompileReport
from lambda_keras.training import resume
from lambda_keras.training.classification import data, recipes
from lambda_keras.training.classification.config import (
    MIXED_PRECISION,
    RESUMABLE_CHANGES,
    ClassificationConfig,
    check_backend,
    flips,
    resolve_loop,
    resolve_recipe,
)
from lambda_keras.training.classification.evaluation import result_line, top_k_accuracy
from lambda_keras.training.classification.model import compiled_model
from lambda_keras.training.custom_loop import fit_with_strategy_run, is_chief
from lambda_keras.training.distribute import Placement
from lambda_keras.training.export import export_run
from lambda_keras.zoo.serving import export_keras_file

__all__ = ["train"]


def train(config: ClassificationConfig) -> dict:
    """Train, evaluate and export.

    ``loop="fit"`` trains with ``model.fit``; ``loop="custom"`` with ``fit_with_strategy_run`` (a
    ``strategy.run`` loop, one input pipeline per worker), which ``auto`` picks for
    ``MultiWorkerMirroredStrategy`` (Keras 3's ``fit`` fails under it). Either way, a run killed at
    any point and started again with the same ``model_dir`` resumes from its last end-of-epoch
    backup (``keras.callbacks.BackupAndRestore`` or a ``tf.train`` checkpoint) and ends at the
    same step. Its settings must be the same then, but for
    [`RESUMABLE_CHANGES`][lambda_keras.training.classification.config.RESUMABLE_CHANGES] (where
    the files are, what is printed or exported, where the run executes): another model, data set,
    batch size or schedule is a ``ValueError`` naming each difference, raised before a model is
    built, and the backup stays ([`lambda_keras.training.resume`][lambda_keras.training.resume]).
    ``sync_batch_norm`` computes batch statistics over the global batch (all replicas);
    ``deterministic`` keeps the input pipeline's order fixed for a seed.

    Returns:
        ``top1``, ``top5`` (evaluation split), ``train_seconds``, ``steps``, ``skipped``
        (``{split: number of damaged image files left out}``, the training and evaluation
        splits), ``model`` (the trained ``keras.Model``, weight averages swapped in) and, when
        exporting, the paths ``keras``, ``saved_model`` and ``labels``.

    Examples:
        >>> from lambda_keras.training.classification import ClassificationConfig, train
        >>> result = train(ClassificationConfig(epochs=1, width_multiplier=0.125))  # doctest: +SKIP
    """
    check_backend(config, keras.backend.backend())
    placement = config.placement.make()  # multi-worker and multi-host: before any other op
    placement.check_batch_size(config.batch_size)
    with placement.run_scope():
        return _train(config, placement)


def _train(config: ClassificationConfig, placement: Placement) -> dict:
    keras.utils.set_random_seed(config.seed)
    keras.config.set_dtype_policy(MIXED_PRECISION[config.mixed_precision] or keras.config.floatx())
    recipe = resolve_recipe(config)
    epochs = config.epochs or recipe.epochs
    inputs = data.make_inputs(config, recipe)
    if config.batch_size > inputs.train.num_examples:
        raise ValueError(
            f"--batch_size={config.batch_size} is larger than the training split "
            f"({inputs.train.num_examples} images of --dataset={config.dataset!r}): every step "
            "would repeat images. Pass a batch size of at most the data set's size."
        )
    steps_per_epoch = config.steps_per_epoch or max(
        1, inputs.train.num_examples // config.batch_size
    )
    loop = resolve_loop(config)
    settings = resume.run_settings(  # --epochs=30 and the recipe's 30 are the same
        config,
        RESUMABLE_CHANGES,
        epochs=epochs,
        warmup_epochs=recipe.warmup_epochs,
        learning_rate=recipe.base_learning_rate,
        horizontal_flip=flips(config),
        loop=loop,
        classes=inputs.train.num_classes,
        backend=keras.backend.backend(),
    )
    resume.check_resume(config.model_dir, settings)
    with placement.variable_scope():
        model = compiled_model(config, recipe, inputs.train.num_classes, steps_per_epoch, epochs)
    if placement.chief:
        resume.record_settings(config.model_dir, settings)
    os.makedirs(config.model_dir, exist_ok=True)
    print(placement.description)
    print(
        f"{config.model}: {model.count_params():,} parameters; {inputs.train.num_examples} "
        f"training images, {steps_per_epoch} steps x {epochs} epochs on "
        f"{placement.replicas} replica(s)"
    )
    print(recipes.describe(recipe, config.batch_size, steps_per_epoch * epochs))
    if loop == "custom":
        return _train_custom(config, model, placement.strategy, inputs, epochs, steps_per_epoch)
    return _train_fit(config, model, placement, inputs, epochs, steps_per_epoch)


def _host_scratch(model_dir: str) -> str:
    """Where a host other than the chief of a multi-host JAX run keeps its own files."""
    import jax

    return os.path.join(model_dir, f"process-{jax.process_index()}")


def _fit_callbacks(model_dir: str, chief: bool) -> list[keras.callbacks.Callback]:
    """Backups, logs and per-epoch checkpoints under ``model_dir``. The other hosts of a
    multi-host JAX run keep their own backup and save each checkpoint too, into
    ``model_dir/process-<i>``: on JAX, saving a model under a distribution places arrays on
    every device, a step all processes must take together (Keras 3.15.1 builds a throw-away
    optimizer while saving): a save on the chief alone stops the run ("passed to device_put is
    not the same on each process")."""
    if not chief:
        scratch = _host_scratch(model_dir)
        return [
            resume.AtomicBackupAndRestore(os.path.join(scratch, resume.BACKUP_DIR)),
            keras.callbacks.ModelCheckpoint(os.path.join(scratch, "checkpoint.keras")),
        ]
    callbacks = [
        resume.AtomicBackupAndRestore(os.path.join(model_dir, resume.BACKUP_DIR)),
        keras.callbacks.CSVLogger(os.path.join(model_dir, "log.csv"), append=True),
        keras.callbacks.ModelCheckpoint(os.path.join(model_dir, "checkpoint.keras")),
        CompileReport(),  # PyTorch: what compiling each step cost
    ]
    if importlib.util.find_spec("tensorboard") is not None:
        callbacks.append(keras.callbacks.TensorBoard(os.path.join(model_dir, "tensorboard")))
    else:
        print("TensorBoard logs skipped: pip install tensorboard (or lambda-keras[train])")
    return callbacks


def _train_fit(config, model, placement: Placement, inputs: data.Inputs, epochs, steps_per_epoch):
    """``model.fit`` (under the run's strategy or distribution) with
    ``_fit_callbacks``."""
    start = time.perf_counter()
    model.fit(
        inputs.train_dataset(),
        epochs=epochs,
        steps_per_epoch=steps_per_epoch,
        callbacks=_fit_callbacks(config.model_dir, placement.chief),
        verbose=config.verbose,
    )
    seconds = time.perf_counter() - start
    _unshare_weight_averages(model)
    batches = inputs.eval_dataset
    if placement.distribution is not None:  # every batch split evenly over the devices
        batches = data.pad_batches(batches, config.batch_size)
    # The test step's compile on PyTorch (a new input signature: fit ran no validation).
    metrics = model.evaluate(batches, return_dict=True, verbose=0, callbacks=[CompileReport()])
    if not placement.chief:
        if config.export:  # the chief's save of model.keras, which every host must take part in
            model.save(os.path.join(_host_scratch(config.model_dir), "model.keras"))
        config = dataclasses.replace(config, export=False)
    return _finish(config, model, metrics, seconds, inputs)


def _unshare_weight_averages(model: keras.Model) -> None:
    """Give each trained weight its own buffer after ``fit`` swapped the averages in (JAX).

    Keras' JAX ``fit`` ends by assigning the optimizer's weight averages (EMA) to the model's
    weights, so both hold the same JAX array; ``evaluate`` then donates the model's buffers to
    its jitted step, which deletes the optimizer's too, and saving the model fails with
    "Array has been deleted" (Keras 3.15.1, jax 0.10.2). A copy breaks the link.
    """
    if keras.backend.backend() != "jax" or not getattr(model.optimizer, "use_ema", False):
        return
    for variable in model.trainable_variables:
        variable.assign(keras.ops.copy(variable.value))


def _train_custom(config, model, strategy, inputs: data.Inputs, epochs, steps_per_epoch) -> dict:
    """The ``strategy.run`` loop (multi-worker). Every worker evaluates on its own; only the
    chief exports, from a copy of the model loaded outside the strategy."""
    start = time.perf_counter()
    fit_with_strategy_run(
        model,
        strategy,
        inputs.train_dataset,
        epochs=epochs,
        steps_per_epoch=steps_per_epoch,
        model_dir=config.model_dir,
        verbose=config.verbose,
    )
    seconds = time.perf_counter() - start
    metrics = top_k_accuracy(model, inputs.eval_dataset)
    if not is_chief(strategy):
        config = dataclasses.replace(config, export=False)
    return _finish(config, model, metrics, seconds, inputs)


def _finish(config, model, metrics, seconds, inputs: data.Inputs) -> dict:
    """Export (when ``config.export``), print and return the run's results."""
    result = {
        "top1": float(metrics["top1"]),
        "top5": float(metrics["top5"]),
        "train_seconds": seconds,
        "steps": int(keras.ops.convert_to_numpy(model.optimizer.iterations)),
        "skipped": inputs.skipped,
        "model": model,
    }
    if config.export:
        files = export_run(
            model, config.model_dir, export_keras_file, config.image_size, inputs.train.class_names
        )
        result.update(files)
    print(result_line(config.eval_split, result))
    if config.export:
        print(f"exported {result['keras']} and SavedModel {result['saved_model']}")
    return result
