"""One training run: data, model, recipe, strategy, fault-tolerant ``fit``, evaluation, export.

``scripts/train.py`` maps its absl flags onto
[`TrainConfig`][lambda_keras.training.trainer.TrainConfig] and calls
[`train`][lambda_keras.training.trainer.train]. Keras runs on TensorFlow (``tf.distribute``
strategies) or on JAX (``keras.distribution``, the TPU path); the input pipeline is ``tf.data`` on
both.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import json
import math
import os
import time
from collections.abc import Callable

import keras
import tensorflow as tf

from lambda_keras import zoo
from lambda_keras.training import data, recipes, resume
from lambda_keras.training.custom_loop import fit_with_strategy_run, is_chief
from lambda_keras.training.distribute import Placement, check_strategy, make_placement
from lambda_keras.training.evaluation import top_k_accuracy
from lambda_keras.training.serving import export_for_serving, export_keras_file

__all__ = ["TrainConfig", "build_model", "train"]

# "none": Keras' float type (keras.config.floatx(), float32 unless changed).
MIXED_PRECISION = {"none": None, "bfloat16": "mixed_bfloat16", "float16": "mixed_float16"}
LOOPS = ("auto", "fit", "custom")
# Options a resumed run may change: resume's own, the hosts of a multi-host run, where the data
# is and whether its order is fixed.
RESUMABLE_CHANGES = resume.ALWAYS_RESUMABLE | {
    "coordinator_address",
    "num_processes",
    "process_id",
    "data_dir",
    "manual_dir",
    "deterministic",
}


@dataclasses.dataclass
class TrainConfig:
    """Everything a run needs; defaults are the README's digits demo."""

    model: str = "lambda_resnet50"
    dataset: str = "digits"
    data_dir: str | None = None
    manual_dir: str | None = None
    train_split: str = "train"
    eval_split: str = "test"
    recipe: str = "90ep"
    image_size: int = 32
    crop_min_area: float = 0.25
    horizontal_flip: bool | None = None  # None: all data sets but the digits (not symmetric)
    mixup_alpha: float = 0.0
    cutmix_alpha: float = 0.0
    batch_size: int = 64
    epochs: int | None = 30
    steps_per_epoch: int | None = None  # None: one pass over the training split per epoch
    warmup_epochs: int | None = None
    learning_rate: float | None = None
    width_multiplier: float | None = 0.25
    strategy: str = "auto"
    tpu: str | None = None
    # JAX multi-host runs (keras.distribution.initialize); all three or none.
    coordinator_address: str | None = None
    num_processes: int | None = None
    process_id: int | None = None
    loop: str = "auto"  # "fit", "custom" (strategy.run); auto: custom for multi_worker only
    sync_batch_norm: bool = False
    deterministic: bool = False
    model_dir: str = "runs/digits"
    mixed_precision: str = "none"
    seed: int = 0
    export: bool = True
    verbose: int = 2


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


# Range checks of the numeric options, shared with scripts/train.py's absl flag validators:
# option -> (accepts the value, what is allowed).
OPTION_CHECKS: dict[str, tuple[Callable[[object], bool], str]] = {
    "epochs": (
        lambda x: x is None or (isinstance(x, int) and x >= 1),
        "a positive number of epochs (leave it unset for the recipe's)",
    ),
    "steps_per_epoch": (
        lambda x: x is None or (isinstance(x, int) and x >= 1),
        "an integer >= 1 (default: one pass over the training split)",
    ),
    "warmup_epochs": (
        lambda x: x is None or (isinstance(x, int) and x >= 0),
        "a number of epochs >= 0",
    ),
    "learning_rate": (lambda x: x is None or (_finite(x) and x > 0), "a finite number > 0"),
    "mixup_alpha": (lambda x: _finite(x) and x >= 0, "a finite number >= 0 (0: off)"),
    "cutmix_alpha": (lambda x: _finite(x) and x >= 0, "a finite number >= 0 (0: off)"),
    "crop_min_area": (lambda x: _finite(x) and 0 < x <= 1, "a fraction in (0, 1]"),
    "batch_size": (lambda x: isinstance(x, int) and x >= 1, "a positive integer"),
    "image_size": (lambda x: isinstance(x, int) and x >= 32, "an integer >= 32 (the /32 models)"),
    "width_multiplier": (
        lambda x: x is None or (_finite(x) and x > 0),
        "a finite number > 0 (1.0: the paper's widths)",
    ),
    "seed": (lambda x: isinstance(x, int) and x >= 0, "an integer >= 0"),
    "num_processes": (
        lambda x: x is None or (isinstance(x, int) and x >= 1),
        "an integer >= 1 (the hosts of a multi-host JAX run)",
    ),
    "process_id": (
        lambda x: x is None or (isinstance(x, int) and x >= 0),
        "an integer >= 0 (this host's index in a multi-host JAX run)",
    ),
}


def _check(config: TrainConfig):
    for option, (accepts, allowed) in OPTION_CHECKS.items():
        value = getattr(config, option)
        if not accepts(value):
            raise ValueError(f"--{option} must be {allowed}; received {option}={value!r}.")
    if config.recipe not in recipes.RECIPES:
        raise ValueError(
            f"--recipe must be one of {sorted(recipes.RECIPES)}; received {config.recipe!r}."
        )
    if config.mixed_precision not in MIXED_PRECISION:
        raise ValueError(
            f"--mixed_precision must be one of {sorted(MIXED_PRECISION)}; received "
            f"{config.mixed_precision!r}."
        )
    zoo.model_builder(config.model)  # unknown names fail here, with suggestions
    if config.loop not in LOOPS:
        raise ValueError(f"--loop must be one of {', '.join(LOOPS)}; received {config.loop!r}.")
    backend = keras.backend.backend()
    check_strategy(config.strategy, backend)
    if backend != "tensorflow" and config.loop == "custom":
        raise ValueError(
            f"--loop=custom is a tf.distribute (strategy.run) loop and needs Keras on "
            f"TensorFlow; this run is on {backend}, where model.fit runs under "
            "keras.distribution (--loop=fit or auto)."
        )
    if config.strategy == "multi_worker" and config.loop == "fit":
        raise ValueError(
            "--strategy=multi_worker with --loop=fit: Keras 3's model.fit fails under "
            "MultiWorkerMirroredStrategy (keras-team/keras#20585, 'Attempt to convert a value "
            "(PerReplica)'). Use --loop=custom (the default for multi_worker)."
        )


def build_model(config: TrainConfig, num_classes: int, recipe: recipes.Recipe) -> keras.Model:
    """The zoo model ``config.model`` for ``num_classes`` at ``config.image_size``.

    ``--width_multiplier`` reaches builders that take one; dropout and stochastic depth follow
    the recipe and the model's Table 20 rows (``Recipe.model_regularization``).
    """
    info = zoo.model_info(config.model)
    kwargs = {"input_shape": (config.image_size, config.image_size, 3), "classes": num_classes}
    accepts = inspect.signature(info.builder).parameters
    if config.width_multiplier is not None and "width_multiplier" in accepts:
        kwargs["width_multiplier"] = config.width_multiplier
    kwargs.update(recipe.model_regularization(info, config.image_size))
    return info.builder(**kwargs)


def train(config: TrainConfig) -> dict:
    """Train, evaluate and export.

    ``loop="fit"`` trains with ``model.fit``; ``loop="custom"`` with ``fit_with_strategy_run`` (a
    ``strategy.run`` loop, one input pipeline per worker), which ``auto`` picks for
    ``MultiWorkerMirroredStrategy`` (Keras 3's ``fit`` fails under it). Either way, a run killed at
    any point and started again
    with the same ``model_dir`` resumes from its last end-of-epoch backup
    (``keras.callbacks.BackupAndRestore`` or a ``tf.train`` checkpoint) and ends at the same
    step. Its settings must be the same then, but for ``RESUMABLE_CHANGES`` (where the files
    are, what is printed or exported, the strategy): another model, data set, batch size or schedule
    is a ``ValueError`` naming each difference, raised before a model is built, and the backup stays
    ([`lambda_keras.training.resume`][lambda_keras.training.resume]). ``sync_batch_norm`` computes
    batch statistics over the global batch (all replicas); ``deterministic`` keeps the input
    pipeline's order fixed for a seed.

    Returns:
        ``top1``, ``top5`` (evaluation split), ``train_seconds``, ``steps``, ``skipped``
        (``{split: number of damaged image files left out}``, the training and evaluation
        splits), ``model`` (the trained ``keras.Model``, weight averages swapped in) and, when
        exporting, the paths ``keras`` and ``saved_model``.
    """
    _check(config)
    placement = make_placement(  # multi-worker and multi-host: before any other op
        config.strategy,
        config.tpu,
        config.coordinator_address,
        config.num_processes,
        config.process_id,
    )
    placement.check_batch_size(config.batch_size)
    with placement.run_scope():
        return _train(config, placement)


def _train(config: TrainConfig, placement: Placement) -> dict:
    keras.utils.set_random_seed(config.seed)
    keras.config.set_dtype_policy(MIXED_PRECISION[config.mixed_precision] or keras.config.floatx())
    recipe = _recipe(config)
    epochs = config.epochs or recipe.epochs
    inputs = _inputs(config, recipe)
    if config.batch_size > inputs.train.num_examples:
        raise ValueError(
            f"--batch_size={config.batch_size} is larger than the training split "
            f"({inputs.train.num_examples} images of --dataset={config.dataset!r}): every step "
            "would repeat images. Pass a batch size of at most the data set's size."
        )
    steps_per_epoch = config.steps_per_epoch or max(
        1, inputs.train.num_examples // config.batch_size
    )
    loop = config.loop
    if loop == "auto":
        loop = "custom" if config.strategy == "multi_worker" else "fit"
    settings = resume.run_settings(  # --epochs=30 and the recipe's 30 are the same
        config,
        RESUMABLE_CHANGES,
        epochs=epochs,
        warmup_epochs=recipe.warmup_epochs,
        learning_rate=recipe.base_learning_rate,
        horizontal_flip=_flips(config),
        loop=loop,
        classes=inputs.train.num_classes,
        backend=keras.backend.backend(),
    )
    resume.check_resume(config.model_dir, settings)
    with placement.variable_scope():
        model = _compiled_model(config, recipe, inputs.train.num_classes, steps_per_epoch, epochs)
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


def _recipe(config: TrainConfig) -> recipes.Recipe:
    """The named recipe with the run's overrides (warm-up, learning rate)."""
    recipe = recipes.RECIPES[config.recipe]
    if config.warmup_epochs is not None:
        recipe = dataclasses.replace(recipe, warmup_epochs=config.warmup_epochs)
    if config.learning_rate is not None:
        recipe = dataclasses.replace(recipe, base_learning_rate=config.learning_rate)
    return recipe


@dataclasses.dataclass
class _Inputs:
    """A run's data: the training source, its pipeline factory, the evaluation batches and the
    damaged files each split left out (``{split: count}``)."""

    train: data.Source
    train_dataset: Callable[[tf.distribute.InputContext | None], tf.data.Dataset]
    eval_dataset: tf.data.Dataset
    skipped: dict[str, int]


def _flips(config: TrainConfig) -> bool:
    """Whether training flips images: ``--horizontal_flip``, by default all data sets but the
    digits (not mirror-symmetric)."""
    if config.horizontal_flip is None:
        return config.dataset != "digits"
    return config.horizontal_flip


def _inputs(config: TrainConfig, recipe: recipes.Recipe) -> _Inputs:
    sources = {
        split: data.load_source(
            config.dataset,
            split,
            image_size=config.image_size,
            seed=config.seed,
            data_dir=config.data_dir,
            manual_dir=config.manual_dir,
        )
        for split in (config.train_split, config.eval_split)
    }
    train_source = sources[config.train_split]
    flip = _flips(config)
    magnitude = recipe.randaugment_magnitude(zoo.model_info(config.model), config.image_size)

    def train_dataset(input_context=None):
        return data.make_dataset(
            train_source,
            training=True,
            image_size=config.image_size,
            global_batch_size=config.batch_size,
            seed=config.seed,
            repeat=True,
            crop_scale=(config.crop_min_area, 1.0),
            horizontal_flip=flip,
            randaugment_magnitude=magnitude,
            mixup_alpha=config.mixup_alpha,
            cutmix_alpha=config.cutmix_alpha,
            deterministic=config.deterministic,
            input_context=input_context,
        )

    eval_dataset = data.make_dataset(
        sources[config.eval_split],
        training=False,
        image_size=config.image_size,
        global_batch_size=config.batch_size,
    )
    skipped = {split: len(source.skipped) for split, source in sources.items()}
    return _Inputs(train_source, train_dataset, eval_dataset, skipped)


def _compiled_model(config, recipe, num_classes, steps_per_epoch, epochs) -> keras.Model:
    """The model with the recipe's regularisation, batch-norm decay, optimizer and loss; call
    under the strategy's scope."""
    model = build_model(config, num_classes, recipe)
    recipe.prepare(model, steps_per_epoch * epochs)
    if config.sync_batch_norm and keras.backend.backend() == "jax":
        print(
            "--sync_batch_norm: on JAX the step is one program over all devices, so batch-norm "
            "statistics are over the global batch already"
        )
    elif config.sync_batch_norm:
        for layer in recipes.all_layers(model):
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
    ]
    if importlib.util.find_spec("tensorboard") is not None:
        callbacks.append(keras.callbacks.TensorBoard(os.path.join(model_dir, "tensorboard")))
    else:
        print("TensorBoard logs skipped: pip install tensorboard (or lambda-keras[train])")
    return callbacks


def _train_fit(config, model, placement: Placement, inputs: _Inputs, epochs, steps_per_epoch):
    """``model.fit`` (under the run's strategy or distribution) with
    [`_fit_callbacks`][lambda_keras.training.trainer._fit_callbacks]."""
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
    metrics = model.evaluate(batches, return_dict=True, verbose=0)
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


def _train_custom(config, model, strategy, inputs: _Inputs, epochs, steps_per_epoch) -> dict:
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
    return _finish(config, model, metrics, seconds, inputs, reload_for_export=True)


def result_line(eval_split: str, result: dict) -> str:
    """The run's last line: the scores, how long it trained and, when any split left damaged
    files out, how many of each (their paths are printed when the data is read)."""
    line = (
        f"{eval_split} top-1 {result['top1']:.4f}, top-5 {result['top5']:.4f} "
        f"({math.ceil(result['train_seconds'])} s of training, {result['steps']} steps"
    )
    if any(result["skipped"].values()):
        counts = ", ".join(f"{n} of {split}" for split, n in result["skipped"].items())
        line += f"; damaged image files skipped: {counts}, listed above"
    return line + ")"


def _finish(config, model, metrics, seconds, inputs: _Inputs, reload_for_export=False) -> dict:
    """Export (when ``config.export``), print and return the run's results."""
    result = {
        "top1": float(metrics["top1"]),
        "top5": float(metrics["top5"]),
        "train_seconds": seconds,
        "steps": int(model.optimizer.iterations.numpy()),
        "skipped": inputs.skipped,
        "model": model,
    }
    if config.export:
        keras_path = os.path.join(config.model_dir, "model.keras")
        model.save(keras_path)
        result["keras"] = keras_path
        saved_model = os.path.join(config.model_dir, "saved_model")
        if keras.backend.backend() == "tensorflow":
            serving = keras.saving.load_model(keras_path) if reload_for_export else model
            result["saved_model"] = export_for_serving(serving, saved_model, config.image_size)
        else:  # the serving graph is TensorFlow's: built from the .keras file on TensorFlow
            result["saved_model"] = export_keras_file(keras_path, saved_model, config.image_size)
        with open(os.path.join(config.model_dir, "class_names.json"), "w") as f:
            json.dump(inputs.train.class_names, f)
    print(result_line(config.eval_split, result))
    if config.export:
        print(f"exported {result['keras']} and SavedModel {result['saved_model']}")
    return result
