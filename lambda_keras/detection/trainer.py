"""Train and evaluate Mask R-CNN on COCO-format data: recipes, the run, its exports.

Recipes:

* ``"paper"`` (App. F.3): from scratch, synchronised batch norm, 1024 x 1024, large-scale
  jitter [0.1, 2.0], SGD momentum 0.9, linear warm-up over 1,000 steps from 0 to 0.32 at batch
  256 (scaled linearly with the batch), divided by 10 at 90%, 95% and 97.5% of 130k steps,
  weight decay 4e-5.
* ``"finetune"``: from the backbone's classification weights with frozen batch norm, the same
  schedule shape at 0.02 per 16 images, weight decay 1e-4 (the usual Mask R-CNN fine-tuning).
  With ``weights`` (``"coco"`` or a converted ``.weights.h5``) it starts from torchvision's
  COCO Mask R-CNN: on ``--backbone=torchvision_resnet`` the whole model but its class layers
  (:func:`~lambda_keras.detection.maskrcnn_resnet50_fpn`), on another backbone whose stages
  are 256/512/1024/2048 wide (``lambda_resnet`` or ``resnet_rs`` at depth 50, width 1) the FPN,
  RPN and heads but the class layers. The heads keep the standard widths then.
* ``"shapes"``: the embedded shapes data on a CPU: 128 x 128, AdamW 1e-3 with warm-up, jitter
  [0.8, 1.25], heads narrowed to 64 FPN channels, a 256-unit box head, a 64-channel mask head
  and 128 RoIs per image.

A killed run resumes from its last epoch (``keras.callbacks.BackupAndRestore`` under
``model_dir``) when started again with the same settings; other settings are an error naming
them, and the backup stays (:mod:`lambda_keras.training.resume`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import time

import keras
import numpy as np
import tensorflow as tf

from lambda_keras import _validation as v
from lambda_keras import zoo
from lambda_keras.detection import coco, coco_eval
from lambda_keras.detection.mask_rcnn import MaskRCNN
from lambda_keras.detection.schedules import WarmupStepDecay
from lambda_keras.training import resume
from lambda_keras.training.distribute import is_chief, make_strategy
from lambda_keras.zoo.weights import WeightsSpec, require_pinned, resolve_weights

__all__ = [
    "BACKBONES",
    "RECIPES",
    "DetectionConfig",
    "DetectionRecipe",
    "DetectionRun",
    "PreparedData",
    "WarmupStepDecay",
    "prepare_data",
    "resolve_run",
    "train",
]

# --backbone: the backbone class and its arguments beyond depth, width, batch norm and weights.
_BACKBONE_CLASSES = {
    "lambda_resnet": (zoo.LambdaResNetBackbone, {}),
    "lambda_resnet_c4": (zoo.LambdaResNetBackbone, {"c4": True}),
    "resnet_rs": (zoo.ResNetRSBackbone, {}),
    # torchvision's ResNet-50 with frozen batch norm: the whole maskrcnn_resnet50_fpn.
    "torchvision_resnet": (None, {}),
}
BACKBONES = tuple(_BACKBONE_CLASSES)
# Recipe head options that set widths: a model started from COCO weights keeps COCO's.
_HEAD_WIDTHS = ("fpn_channels", "box_head_units", "mask_head_channels")


@dataclasses.dataclass(frozen=True)
class DetectionRecipe:
    """How a recipe trains. ``learning_rate`` is per ``reference_batch`` images."""

    name: str
    image_size: int
    steps: int
    batch_size: int
    learning_rate: float
    reference_batch: int
    warmup_steps: int
    weight_decay: float
    scale_range: tuple[float, float]
    batch_norm: str
    optimizer: str = "sgd"
    heads: tuple[tuple[str, object], ...] = ()

    @property
    def head_options(self) -> dict:
        """MaskRCNN arguments that differ from the standard Mask R-CNN's."""
        return dict(self.heads)

    def make_optimizer(self, batch_size: int, total_steps: int) -> keras.optimizers.Optimizer:
        peak = self.learning_rate * batch_size / self.reference_batch
        schedule = WarmupStepDecay(peak, min(self.warmup_steps, total_steps // 4), total_steps)
        if self.optimizer == "adam":
            return keras.optimizers.AdamW(schedule, weight_decay=self.weight_decay)
        return keras.optimizers.SGD(
            schedule, momentum=0.9, weight_decay=self.weight_decay, global_clipnorm=10.0
        )


RECIPES = {
    r.name: r
    for r in (
        DetectionRecipe(
            "paper", 1024, 130_000, 256, 0.32, 256, 1000, 4e-5, (0.1, 2.0), "synchronized"
        ),
        DetectionRecipe("finetune", 1024, 90_000, 16, 0.02, 16, 1000, 1e-4, (0.1, 2.0), "frozen"),
        # Narrow heads: at the standard widths the mask head alone costs ~60 GFLOPs per image.
        DetectionRecipe(
            name="shapes",
            image_size=128,
            steps=1000,
            batch_size=8,
            learning_rate=1e-3,
            reference_batch=8,
            warmup_steps=100,
            weight_decay=1e-4,
            scale_range=(0.8, 1.25),
            batch_norm="standard",
            optimizer="adam",
            heads=(
                ("fpn_channels", 64),
                ("box_head_units", 256),
                ("mask_head_channels", 64),
                ("rois_per_image", 128),
                ("rpn_top_k", (1000, 500, 500, 300)),
            ),
        ),
    )
}


@dataclasses.dataclass(frozen=True)
class DetectionConfig:
    """One training run (the flags of ``training/train_maskrcnn.py``)."""

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
    strategy: str = "auto"
    tpu: str | None = None
    jit_compile: bool = False
    model_dir: str = "runs/maskrcnn"
    export: bool = True
    seed: int = 0
    verbose: int = 2


def _sources(config: DetectionConfig):
    given = [
        config.train_annotations,
        config.train_images,
        config.val_annotations,
        config.val_images,
    ]
    pairs = (given[:2], given[2:])
    complete = all(ann and (images or _is_labelme(ann)) for ann, images in pairs)
    if any(given) and not complete:
        raise ValueError(
            "--train_annotations, --train_images, --val_annotations and --val_images go "
            "together (all four, or none for the generated shapes data; with "
            "--train_annotations=labelme:DIR the images flag of that set may be left out)."
        )
    if not any(given):
        from lambda_keras.detection.shapes import write_shapes_dataset

        paths = write_shapes_dataset(config.shapes_dir, seed=config.seed)
        given = [
            paths[k] for k in ("train_annotations", "train_images", "val_annotations", "val_images")
        ]
    elif any(_is_labelme(ann) for ann, _ in pairs):
        given = _from_labelme(given, config.model_dir)
    train = coco.load_coco(given[0], given[1])
    val = coco.load_coco(given[2], given[3])
    if val.category_ids != train.category_ids:
        raise ValueError(
            f"The validation categories {val.category_ids} differ from the training ones "
            f"{train.category_ids}."
        )
    return train, val


def _is_labelme(annotations) -> bool:
    from lambda_keras.detection.labelme import PREFIX

    return str(annotations).startswith(PREFIX)


def _from_labelme(given: list, model_dir: str) -> list:
    """labelme folders -> COCO files in ``model_dir`` (``labelme_train.json``,
    ``labelme_val.json``), one category list for both: the union of their labels."""
    from lambda_keras.detection import labelme

    folders = {
        split: str(ann).removeprefix(labelme.PREFIX)
        for split, ann in (("train", given[0]), ("val", given[2]))
        if _is_labelme(ann)
    }
    labels = sorted(set().union(*(labelme.folder_labels(f) for f in folders.values())))
    given = list(given)
    for split, folder in folders.items():
        index = 0 if split == "train" else 2
        output = os.path.join(model_dir, f"labelme_{split}.json")
        given[index] = labelme.write_coco(folder, output, labels)
        given[index + 1] = folder
    return given


@dataclasses.dataclass(frozen=True)
class DetectionRun:
    """A run resolved once (:func:`resolve_run`): its config, recipe and backbone class, and the
    recipe's defaults filled in where the config leaves them unset."""

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
    v.one_of("recipe", config.recipe, list(RECIPES))
    v.one_of("backbone", config.backbone, list(BACKBONES))
    if config.strategy == "multi_worker":
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
    resolved = resolve_weights(config.backbone_weights, run.backbone_architecture)
    if isinstance(resolved, WeightsSpec):
        require_pinned(resolved)
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


def build_model(run: DetectionRun, num_classes: int) -> MaskRCNN:
    """The backbone the run names, under the recipe's batch-norm mode, with Mask R-CNN; with
    ``weights``, started from torchvision's COCO model (module docstring)."""
    from lambda_keras.detection.torchvision.mask_rcnn import maskrcnn_resnet50_fpn

    config = run.config
    heads = run.recipe.head_options
    if config.weights is not None or run.backbone_class is None:
        heads = {k: value for k, value in heads.items() if k not in _HEAD_WIDTHS}
    if run.backbone_class is None:
        return maskrcnn_resnet50_fpn(
            config.weights, num_classes, reset_class_layers=config.weights is not None, **heads
        )
    backbone = run.backbone_class(
        config.depth,
        **dict(run.backbone_options),
        width_multiplier=config.width_multiplier,
        batch_norm=run.recipe.batch_norm,
        weights=config.backbone_weights,
    )
    model = MaskRCNN(backbone, num_classes, **heads)
    if config.weights is not None:
        model.build((None, None, None, 3))
        copy_heads(maskrcnn_resnet50_fpn(config.weights), model)
    return model


def copy_heads(source: keras.Model, target: MaskRCNN) -> None:
    """Copy ``source``'s FPN, RPN, box and mask heads into ``target`` (built), all but the
    class-specific layers; ``ValueError`` naming the first weight whose shape differs."""
    from lambda_keras.detection.torchvision.mask_rcnn import is_class_layer

    for name in ("fpn", "rpn_head", "box_head", "mask_head"):
        pairs = zip(getattr(source, name).weights, getattr(target, name).weights, strict=True)
        for src, dst in pairs:
            if is_class_layer(dst):
                continue
            if tuple(src.shape) != tuple(dst.shape):
                raise ValueError(
                    f"The COCO model's {src.path} has shape {tuple(src.shape)}; this model's "
                    f"{dst.path} has {tuple(dst.shape)}: its backbone's stages must be "
                    "256/512/1024/2048 wide and its heads of the standard widths."
                )
            dst.assign(src)


@dataclasses.dataclass(frozen=True)
class PreparedData:
    """The resolved run, its checked data, what :func:`prepare_data` read, and the strategy it
    runs under (made first: a TPU is connected before any other TensorFlow op)."""

    run: DetectionRun
    train_source: coco.CocoSource
    val_source: coco.CocoSource
    train_data: object  # tf.data.Dataset of (images, targets)
    strategy: tf.distribute.Strategy
    resume_settings: dict  # checked against a killed run's, recorded when training starts


# Options a resumed run may change: where the files are, what is printed or exported, how the
# work is spread and compiled. Data paths may move; the categories are checked instead.
RESUMABLE_CHANGES = frozenset(
    {
        "model_dir",
        "verbose",
        "export",
        "strategy",
        "tpu",
        "jit_compile",
        "shapes_dir",
        "train_annotations",
        "train_images",
        "val_annotations",
        "val_images",
    }
)


def prepare_data(config: DetectionConfig) -> PreparedData:
    """Read and check the run's data (or write the shapes data). Every mistake in the data
    (a file, an annotation, an image) raises ``ValueError``/``FileNotFoundError`` here, before
    a model is built: the scripts report these as one line, and anything later as a bug. So
    does resuming a killed run in ``model_dir`` with other settings
    (:func:`lambda_keras.training.resume.check_resume`; the backup stays)."""
    run = resolve_run(config)
    strategy = make_strategy(config.strategy, config.tpu)
    train_source, val_source = _sources(config)
    settings = resume.run_settings(
        config,
        RESUMABLE_CHANGES,
        image_size=run.image_size,
        batch_size=run.batch_size,
        steps=run.steps,
        category_ids=list(train_source.category_ids),
    )
    resume.check_resume(config.model_dir, settings)
    data = coco.make_dataset(
        train_source,
        image_size=run.image_size,
        batch_size=run.batch_size,
        training=True,
        max_instances=config.max_instances,
        scale_range=run.recipe.scale_range,
        seed=config.seed,
    )
    return PreparedData(run, train_source, val_source, data, strategy, settings)


def train(config: DetectionConfig, prepared: PreparedData | None = None) -> dict:
    """Train, evaluate with COCOeval on the validation set, export; returns the scores.
    ``prepared``: the run's :func:`prepare_data` (read here when not given)."""
    keras.utils.set_random_seed(config.seed)
    prepared = prepared or prepare_data(config)
    run = prepared.run
    recipe, image_size, batch_size = run.recipe, run.image_size, run.batch_size
    train_source, val_source, data = prepared.train_source, prepared.val_source, prepared.train_data
    strategy = prepared.strategy
    os.makedirs(config.model_dir, exist_ok=True)
    epochs = max(1, -(-run.steps // config.steps_per_epoch))
    with strategy.scope():
        model = build_model(run, train_source.num_classes)
        # Build every layer (BackupAndRestore needs the variables before fit).
        model(np.zeros((1, image_size, image_size, 3), "float32"))
        model.compile(
            optimizer=recipe.make_optimizer(batch_size, epochs * config.steps_per_epoch),
            jit_compile=config.jit_compile,
        )
        # Slots now, not in the first traced step (which would then be traced twice).
        model.optimizer.build(model.trainable_variables)
    if is_chief(strategy):
        resume.record_settings(config.model_dir, prepared.resume_settings)
    print(
        f"Mask R-CNN, {config.backbone}{config.depth} backbone (width {config.width_multiplier}), "
        f"{train_source.num_classes} classes, {len(train_source.image_ids)} training images, "
        f"recipe {recipe.name}: {epochs} x {config.steps_per_epoch} steps at batch {batch_size}, "
        f"{image_size}x{image_size}."
    )
    if train_source.skipped:
        print(f"Skipped {len(train_source.skipped)} annotations (degenerate box or empty mask).")
    callbacks = [
        resume.AtomicBackupAndRestore(os.path.join(config.model_dir, resume.BACKUP_DIR)),
        keras.callbacks.CSVLogger(os.path.join(config.model_dir, "log.csv"), append=True),
    ]
    start = time.perf_counter()
    model.fit(
        data,
        epochs=epochs,
        steps_per_epoch=config.steps_per_epoch,
        callbacks=callbacks,
        verbose=config.verbose,
    )
    seconds = time.perf_counter() - start
    scores = coco_eval.evaluate(model, val_source, image_size=image_size, batch_size=batch_size)
    result = {"scores": scores, "train_seconds": seconds, "model": model}
    if config.export:
        result.update(_export(model, config, train_source, image_size))
    print(
        f"box AP {scores['bbox']['AP']:.3f}, mask AP {scores['segm']['AP']:.3f} "
        f"(IoU .50:.95) after {seconds:.0f} s of training."
    )
    return result


def _export(model, config: DetectionConfig, source, image_size: int) -> dict:
    from lambda_keras.detection.serving import export_detector

    keras_path = os.path.join(config.model_dir, "model.keras")
    model.save(keras_path)
    saved = export_detector(model, os.path.join(config.model_dir, "saved_model"), image_size)
    labels = {"category_ids": list(source.category_ids), "class_names": list(source.class_names)}
    with open(os.path.join(config.model_dir, "labels.json"), "w") as f:
        json.dump(labels, f)
    print(f"Saved {keras_path} and the serving SavedModel {saved}.")
    return {"keras": keras_path, "saved_model": saved}
