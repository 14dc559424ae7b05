"""One Mask R-CNN training run's settings (the flags of ``scripts/train_maskrcnn.py``), checked
when made, and the run resolved from them before any data is read: its recipe, its backbone (the
``--backbone`` table) and the recipe's defaults where the config leaves them unset; settings that
would fail only once a model is built are errors here."""

from __future__ import annotations

import dataclasses
import os

from lambda_keras import _validation as v
from lambda_keras import zoo
from lambda_keras.detection.image_size import check_image_size
from lambda_keras.training import resume
from lambda_keras.training.detection.recipes import RECIPES, DetectionRecipe
from lambda_keras.training.distribute import PlacementConfig, check_placement
from lambda_keras.zoo.pyramid_backbone import check_depth
from lambda_keras.zoo.weights import resolve_weights

__all__ = ["BACKBONES", "RESUMABLE_CHANGES", "DetectionConfig", "DetectionRun", "resolve_run"]

# --backbone: the backbone class and its arguments beyond depth, width, batch norm and weights.
_BACKBONE_CLASSES = {
    "lambda_resnet": (zoo.LambdaResNetBackbone, {}),
    "lambda_resnet_c4": (zoo.LambdaResNetBackbone, {"c4": True}),
    "resnet_rs": (zoo.ResNetRSBackbone, {}),
    # torchvision's ResNet-50 with frozen batch norm: the whole maskrcnn_resnet50_fpn.
    "torchvision_resnet": (None, {}),
}
BACKBONES = tuple(_BACKBONE_CLASSES)
"""The `--backbone` values of the detection trainer."""


# Options a resumed run may change: resume's own, whether the step is compiled, and the data
# paths (the data may move; the categories are checked instead).
RESUMABLE_CHANGES = resume.ALWAYS_RESUMABLE | {
    "jit_compile",
    "shapes_dir",
    "train_annotations",
    "train_images",
    "val_annotations",
    "val_images",
}
"""Settings that may differ when a killed detection run is started again over its `model_dir`."""


@dataclasses.dataclass(frozen=True)
class DetectionConfig:
    """One training run (the flags of ``scripts/train_maskrcnn.py``); each field is checked when
    the config is made (``CHECKS``, the same rules as the script's flag validators).

    Examples:
        >>> DetectionConfig(recipe="shapes", steps=10).placement.strategy
        'auto'
    """

    train_annotations: str | None = None
    train_images: str | None = None
    val_annotations: str | None = None
    val_images: str | None = None
    shapes_dir: str = "runs/shapes_data"
    recipe: str = "shapes"
    backbone: str = "lambda_resnet"
    depth: int = 50
    width_multiplier: float = 0.25
    backbone_weights: str | None = None
    weights: str | None = None
    image_size: int | None = None
    batch_size: int | None = None
    steps: int | None = None
    steps_per_epoch: int = 100
    max_instances: int = 100
    placement: PlacementConfig = PlacementConfig()
    jit_compile: bool = False
    model_dir: str = "runs/maskrcnn"
    export: bool = True
    seed: int = 0
    verbose: int = 2

    CHECKS = {
        "recipe": lambda name, value: v.one_of(name, value, list(RECIPES)),
        "backbone": lambda name, value: v.one_of(name, value, list(BACKBONES)),
        "depth": lambda name, value: check_depth(value, name),
        "width_multiplier": v.positive_number,
        "image_size": v.optional(lambda name, value: check_image_size(value, name)),
        "batch_size": v.optional(v.positive_int),
        "steps": v.optional(v.positive_int),
        "steps_per_epoch": v.positive_int,
        "max_instances": v.positive_int,
        "seed": v.non_negative_int,
        "placement": check_placement,
    }
    """Each field's check (`_validation`'s), run when a config is made and as the flag's
    validator of ``scripts/train_maskrcnn.py``."""

    def __post_init__(self):
        v.check_fields(self, self.CHECKS)


@dataclasses.dataclass(frozen=True)
class DetectionRun:
    """A run resolved once ([`resolve_run`][lambda_keras.training.detection.config.resolve_run]):
    its
    config, recipe and backbone class, and the recipe's defaults filled in where the config leaves
    them unset."""

    config: DetectionConfig
    recipe: DetectionRecipe
    backbone_class: type
    backbone_options: tuple[tuple[str, object], ...]  # beyond depth, width, batch norm, weights
    image_size: int
    batch_size: int
    steps: int

    @property
    def backbone_architecture(self) -> str:
        """The zoo classifier whose weights the backbone loads (``--backbone_weights``)."""
        return self.backbone_class.classifier_name(self.config.depth, **dict(self.backbone_options))


def resolve_run(config: DetectionConfig) -> DetectionRun:
    """Check the settings that fail only once a model is built or a step runs, and resolve the
    recipe, the backbone and the defaults, before any data is read."""
    if config.placement.strategy == "multi_worker":
        raise ValueError(
            "--strategy=multi_worker: Mask R-CNN trains with model.fit, which fails under "
            "MultiWorkerMirroredStrategy in Keras 3 (keras-team/keras#20585). Use auto, tpu, "
            "mirrored or one_device."
        )
    recipe = RECIPES[config.recipe]
    backbone_class, options = _BACKBONE_CLASSES[config.backbone]
    _check_start(config)
    run = DetectionRun(
        config=config,
        recipe=recipe,
        backbone_class=backbone_class,
        backbone_options=tuple(options.items()),
        image_size=config.image_size or recipe.image_size,
        batch_size=config.batch_size or recipe.batch_size,
        steps=config.steps or recipe.steps,
    )
    if backbone_class is None:
        return run
    # An unknown name or a missing file, before the data is read (the backbone loads it later).
    resolve_weights(config.backbone_weights, run.backbone_architecture)
    return run


def _check_start(config: DetectionConfig) -> None:
    """``weights`` and ``backbone="torchvision_resnet"``: what they need, before data is read."""
    if config.weights is not None and config.weights != "coco":
        path = os.fspath(config.weights)
        if not path.endswith(".weights.h5") or not os.path.isfile(path):
            raise ValueError(
                "--weights must be 'coco' or an existing .weights.h5 file converted with "
                f"python -m lambda_keras.detection.convert_torchvision; received {path!r}."
            )
    if config.backbone == "torchvision_resnet":
        if config.depth != 50 or config.width_multiplier != 1.0 or config.backbone_weights:
            raise ValueError(
                "--backbone=torchvision_resnet is torchvision's ResNet-50 (depth 50, width 1.0) "
                "and starts from --weights, not --backbone_weights; received "
                f"depth={config.depth}, width_multiplier={config.width_multiplier}, "
                f"backbone_weights={config.backbone_weights!r}."
            )
    elif config.weights is not None and (config.depth != 50 or config.width_multiplier != 1.0):
        raise ValueError(
            f"--weights={config.weights} gives the FPN, RPN and heads of a ResNet-50 Mask R-CNN, "
            "which need backbone stages 256/512/1024/2048 wide: --depth=50 "
            f"--width_multiplier=1.0; received depth={config.depth}, "
            f"width_multiplier={config.width_multiplier}."
        )
