"""One classification run's settings (the flags of ``scripts/train.py``), checked when made, and
what the run resolves from them before any data is read: the recipe with its overrides, the
training loop, whether images are flipped."""

from __future__ import annotations

import dataclasses
import os

from lambda_keras import _validation as v
from lambda_keras import zoo
from lambda_keras.training import resume
from lambda_keras.training.classification import recipes
from lambda_keras.training.distribute import PlacementConfig, check_placement, check_strategy

__all__ = [
    "LOOPS",
    "MIXED_PRECISION",
    "RESUMABLE_CHANGES",
    "ClassificationConfig",
    "check_backend",
    "flips",
    "resolve_loop",
    "resolve_recipe",
]

MIXED_PRECISION = {"none": None, "bfloat16": "mixed_bfloat16", "float16": "mixed_float16"}
"""`--mixed_precision` -> Keras dtype policy; "none": Keras' float type
(`keras.config.floatx()`)."""
LOOPS = ("auto", "fit", "custom")
"""`--loop`: `model.fit`, or a `strategy.run` loop (custom); auto: custom for multi_worker."""
RESUMABLE_CHANGES = resume.ALWAYS_RESUMABLE | {"data_dir", "manual_dir", "deterministic"}
"""Settings a killed classification run may change when started again over its `model_dir`:
resume's own, where the data is and whether its order is fixed."""


def _image_size(name: str, value) -> int:
    value = v.positive_int(name, value)
    if value < 32:
        raise ValueError(f"`{name}` must be an integer >= 32 (the /32 models); received {value}.")
    return value


def _dataset(name: str, value) -> str:
    if not isinstance(value, str):
        raise TypeError(f"`{name}` must be a string; received {name}={value!r}.")
    folder = value.removeprefix("folder:")
    if value.startswith("folder:") and not os.path.isdir(folder):
        raise ValueError(f"`{name}`=folder:<root> needs an existing directory; received {value!r}.")
    return value


def _model(name: str, value) -> str:
    zoo.model_builder(value)  # an unknown name fails here, with suggestions
    return value


@dataclasses.dataclass(frozen=True)
class ClassificationConfig:
    """Everything a classification run needs; the defaults are the README's digits demo.

    Each field is checked when the config is made (``CHECKS``, the same rules as the script's
    flag validators); what depends on the backend, when the run starts
    ([`check_backend`][lambda_keras.training.classification.config.check_backend]).

    Examples:
        >>> config = ClassificationConfig(model="resnet_rs50", epochs=1)
        >>> config.placement.strategy
        'auto'
    """

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
    placement: PlacementConfig = PlacementConfig()
    loop: str = "auto"
    sync_batch_norm: bool = False
    deterministic: bool = False
    model_dir: str = "runs/digits"
    mixed_precision: str = "none"
    seed: int = 0
    export: bool = True
    verbose: int = 2

    CHECKS = {
        "model": _model,
        "dataset": _dataset,
        "recipe": lambda name, value: v.one_of(name, value, list(recipes.RECIPES)),
        "image_size": _image_size,
        "crop_min_area": lambda name, value: v.number_in(name, value, 0.0, 1.0, low_open=True),
        "mixup_alpha": lambda name, value: v.number_in(name, value, 0.0, float("inf")),
        "cutmix_alpha": lambda name, value: v.number_in(name, value, 0.0, float("inf")),
        "batch_size": v.positive_int,
        "epochs": v.optional(v.positive_int),
        "steps_per_epoch": v.optional(v.positive_int),
        "warmup_epochs": v.optional(v.non_negative_int),
        "learning_rate": v.optional(v.positive_number),
        "width_multiplier": v.optional(v.positive_number),
        "loop": lambda name, value: v.one_of(name, value, LOOPS),
        "mixed_precision": lambda name, value: v.one_of(name, value, list(MIXED_PRECISION)),
        "seed": v.non_negative_int,
        "placement": check_placement,
    }
    """Each field's check (`_validation`'s), run when a config is made and as the flag's
    validator of ``scripts/train.py``."""

    def __post_init__(self):
        v.check_fields(self, self.CHECKS)


def check_backend(config: ClassificationConfig, backend: str) -> None:
    """Raise ``ValueError`` when Keras' ``backend`` cannot run ``config``'s strategy and loop."""
    strategy = config.placement.strategy
    check_strategy(strategy, backend)
    if backend != "tensorflow" and config.loop == "custom":
        raise ValueError(
            f"--loop=custom is a tf.distribute (strategy.run) loop and needs Keras on "
            f"TensorFlow; this run is on {backend}, where model.fit runs under "
            "keras.distribution (--loop=fit or auto)."
        )
    if strategy == "multi_worker" and config.loop == "fit":
        raise ValueError(
            "--strategy=multi_worker with --loop=fit: Keras 3's model.fit fails under "
            "MultiWorkerMirroredStrategy (keras-team/keras#20585, 'Attempt to convert a value "
            "(PerReplica)'). Use --loop=custom (the default for multi_worker)."
        )


def resolve_recipe(config: ClassificationConfig) -> recipes.Recipe:
    """The named recipe with the run's overrides (warm-up, learning rate)."""
    recipe = recipes.RECIPES[config.recipe]
    if config.warmup_epochs is not None:
        recipe = dataclasses.replace(recipe, warmup_epochs=config.warmup_epochs)
    if config.learning_rate is not None:
        recipe = dataclasses.replace(recipe, base_learning_rate=config.learning_rate)
    return recipe


def resolve_loop(config: ClassificationConfig) -> str:
    """``"fit"`` or ``"custom"``: ``auto`` is custom for ``multi_worker`` (Keras 3's ``fit``
    fails under it), fit otherwise."""
    if config.loop != "auto":
        return config.loop
    return "custom" if config.placement.strategy == "multi_worker" else "fit"


def flips(config: ClassificationConfig) -> bool:
    """Whether training flips images: ``horizontal_flip``, by default all data sets but the
    digits (not mirror-symmetric)."""
    if config.horizontal_flip is None:
        return config.dataset != "digits"
    return config.horizontal_flip
