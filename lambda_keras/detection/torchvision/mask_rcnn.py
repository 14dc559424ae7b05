"""torchvision's ``maskrcnn_resnet50_fpn`` and ``maskrcnn_resnet50_fpn_v2`` as
[MaskRCNN][lambda_keras.detection.MaskRCNN] models, with torchvision's COCO weights.

What makes them torchvision's and not the project's own Mask R-CNN is data
(``TORCHVISION_RULES``, ``TORCHVISION_V2_RULES``), passed to the one ``MaskRCNN``:

* backbone: ResNet-50 v1.5 with frozen batch norm
  ([`resnet`][lambda_keras.detection.torchvision.resnet]); anchors on the cells' corners with
  rounded sides
  ([`TorchvisionAnchors`][lambda_keras.detection.anchor_generator.TorchvisionAnchors]);
  ROIAlign without the half-pixel shift (``roi_align_aligned=False``); proposals smaller than
  1e-3 and detections smaller than 1e-2 pixels dropped; RPN 2000/2000 (train) and 1000/1000
  (test) boxes before/after NMS;
* input: torchvision's transform
  ([`TorchvisionTransform`][lambda_keras.detection.transform.TorchvisionTransform]:
  shorter side 800, longer at most 1333, each image padded to a multiple of 32; every map is
  zeroed beyond that part of a larger batch), so each image gives torchvision's detections for
  it alone, whatever the batch size (a static shape for XLA);
* classes: the project's 0-based classes, torchvision's label minus 1 (COCO's category id
  minus 1 for the COCO model); ``categories`` carries each class's COCO id and name;
* v2 (torchvision's PR #5773 recipe; its COCO AP beside v1's in ``COCO_V2_WEIGHTS.metrics``):
  batch norm (epsilon 1e-5) after every FPN and head convolution, two RPN convolutions, a box
  head of four 3x3 convolutions and one fully connected layer, and a backbone with
  ``BatchNorm2d`` (epsilon 1e-5; it trains in the stages that train) instead of v1's frozen
  batch norm with epsilon 0.

Left as they are (training only): the mask targets are ROIAligned with the half-pixel rule
(torchvision: ``aligned=False`` and adaptive sampling), and RoIs are sampled as in
[`lambda_keras.detection.targets`][lambda_keras.detection.targets].

``weights="coco"`` selects the weights registered as ``maskrcnn_resnet50_fpn_coco`` (v2:
``maskrcnn_resnet50_fpn_v2_coco``)
([lambda_keras.zoo.weights][lambda_keras.zoo.weights]): torchvision's published checkpoint,
fetched once into the Keras cache (``$KERAS_HOME``), checked against its whole SHA-256, read
without PyTorch ([lambda_keras.checkpoints][lambda_keras.checkpoints]), converted once
([checkpoint][lambda_keras.detection.torchvision.checkpoint]) and cached as a ``.weights.h5``
beside it; later calls read the converted file.
"""

from __future__ import annotations

import dataclasses
import os

import keras

from lambda_keras.backend.host_initializers import initial_values_on_host
from lambda_keras.checkpoints import read_checkpoint
from lambda_keras.detection.anchor_generator import TorchvisionAnchors
from lambda_keras.detection.fpn import FeaturePyramid  # noqa: F401  (registered for loading)
from lambda_keras.detection.mask_rcnn import MaskRCNN
from lambda_keras.detection.torchvision import checkpoint
from lambda_keras.detection.torchvision.categories import coco_class_categories
from lambda_keras.detection.torchvision.resnet import resnet50_backbone
from lambda_keras.detection.transform import TorchvisionTransform
from lambda_keras.zoo import weights as weights_lib

__all__ = [
    "ARCHITECTURE",
    "ARCHITECTURE_V2",
    "CLASS_LAYERS",
    "COCO_CLASSES",
    "COCO_V2_WEIGHTS",
    "COCO_WEIGHTS",
    "TORCHVISION_RULES",
    "TORCHVISION_V2_RULES",
    "TORCHVISION_WEIGHTS",
    "TorchvisionVariant",
    "is_class_layer",
    "maskrcnn_resnet50_fpn",
    "maskrcnn_resnet50_fpn_v2",
]

ARCHITECTURE = "maskrcnn_resnet50_fpn"
"""The registry name of torchvision's `maskrcnn_resnet50_fpn` (v1) port."""
ARCHITECTURE_V2 = "maskrcnn_resnet50_fpn_v2"
"""The registry name of torchvision's `maskrcnn_resnet50_fpn_v2` port."""
COCO_CLASSES = 90  # torchvision's 91 labels without the background
"""The classes of torchvision's COCO heads, background excluded (91 labels, ids 1 to 90)."""
# The layers whose shapes depend on the classes: re-initialised when fine-tuning.
CLASS_LAYERS = ("box_head/logits", "box_head/deltas", "mask_head/logits")
"""The layers whose shapes depend on the number of classes: re-initialised by
`reset_class_layers`."""
# torchvision's rules as MaskRCNN settings (the backbone and categories come with the builder).
TORCHVISION_RULES = {
    "rpn_top_k": (2000, 2000, 1000, 1000),
    "anchor_generator": TorchvisionAnchors(),
    "roi_align_aligned": False,
    "proposal_min_size": 1e-3,
    "detection_min_size": 1e-2,
    "detection_candidates": 4000,
}
"""The `MaskRCNN` settings that make it compute what torchvision's v1 model computes: proposal
counts, anchors, ROIAlign without the half-pixel shift, the smallest proposal and detection
sizes, the candidates kept before the final NMS."""
# What maskrcnn_resnet50_fpn_v2 changes: batch norm in the FPN and the heads, two RPN
# convolutions, a box head of four convolutions and one fully connected layer.
TORCHVISION_V2_RULES = {
    **TORCHVISION_RULES,
    "fpn_batch_norm": True,
    "rpn_convs": 2,
    "box_head_convs": 4,
    "box_head_fcs": 1,
    "head_batch_norm": True,
}
"""`TORCHVISION_RULES` plus v2's heads: batch norm in the FPN, two RPN convolutions, four box-
head convolutions and one fc layer."""


@dataclasses.dataclass(frozen=True)
class TorchvisionVariant:
    """One of torchvision's Mask R-CNNs as data: its architecture name, its ``MaskRCNN``
    settings and its backbone's batch norm (epsilon; frozen or trained)."""

    architecture: str
    rules: dict
    backbone_epsilon: float
    frozen_batch_norm: bool


V1 = TorchvisionVariant(ARCHITECTURE, TORCHVISION_RULES, 0.0, True)
V2 = TorchvisionVariant(ARCHITECTURE_V2, TORCHVISION_V2_RULES, 1e-5, False)


def _convert(model: keras.Model, path: str, spec: weights_lib.WeightsSpec) -> None:
    """A torchvision ``.pth`` into the built model (the registry's converter)."""
    del spec
    checkpoint.assign_checkpoint(model, read_checkpoint(path))


weights_lib.register_converter("torchvision", _convert)
# torchvision's weights enums (MaskRCNN_ResNet50_FPN_Weights, ..._V2_Weights): URLs and metrics.
TORCHVISION_WEIGHTS = (
    "https://github.com/pytorch/vision/blob/v0.29.1/torchvision/models/detection/mask_rcnn.py"
)
"""Where torchvision publishes its COCO checkpoints' URLs, digests and metrics (the registry's
source for them)."""
# torchvision publishes the first 8 hex digits of a file's SHA-256 (in its name, what torch.hub
# checks); the whole digest was read in third-party code that pins the file.
_DIGEST_SOURCE = (
    "whole SHA-256 as pinned in third-party code; torchvision publishes its first 8 hex digits "
    "(in the file name), which it matches"
)
# torchvision's code is BSD-3-Clause; its README's "Pre-trained Model License" says a model may
# carry terms derived from its training data (here COCO).
_LICENSE = "COCO's terms may apply, per torchvision"
_LICENSE_SOURCE = "https://github.com/pytorch/vision#pre-trained-model-license"
COCO_WEIGHTS = weights_lib.WeightsSpec(
    name="maskrcnn_resnet50_fpn_coco",
    url="https://download.pytorch.org/models/maskrcnn_resnet50_fpn_coco-bf2d0c1e.pth",
    # The whole SHA-256 (torch.hub checks the 8 digits in the name only); 178,090,079 bytes.
    sha256="bf2d0c1efbc936eeee2bc95a48e80ebc86b891f61b0106485937fc29f9315fc0",
    source=(
        "https://github.com/lc542/ActiveVision-Research-Workbench/blob/79cbdf9/"
        "src/activevision_workbench/adapters/gazexplain/config.py"
    ),
    metrics={"coco_box_ap": 37.9, "coco_mask_ap": 34.6},
    metrics_source=TORCHVISION_WEIGHTS,
    architecture=ARCHITECTURE,
    input_size=800,
    classes=COCO_CLASSES,
    source_format="torchvision",
    aliases=("coco",),
    source_title=_DIGEST_SOURCE,
    license=_LICENSE,
    license_source=_LICENSE_SOURCE,
)
"""The registered spec of torchvision's COCO `maskrcnn_resnet50_fpn` checkpoint
(`weights="coco"`)."""
COCO_V2_WEIGHTS = weights_lib.WeightsSpec(
    name="maskrcnn_resnet50_fpn_v2_coco",
    url="https://download.pytorch.org/models/maskrcnn_resnet50_fpn_v2_coco-73cbd019.pth",
    # The whole SHA-256 (torch.hub checks the 8 digits in the name only); 185,828,065 bytes.
    sha256="73cbd0190fcbe3ba339921fbce2c3a0b6bb9126c9a133c85e43a2a8e060a109e",
    source="https://github.com/Libre-YOLO/libreyolo/blob/ca68445/docs/provenance/mask_rcnn.md",
    metrics={"coco_box_ap": 47.4, "coco_mask_ap": 41.8},
    metrics_source=TORCHVISION_WEIGHTS,
    architecture=ARCHITECTURE_V2,
    input_size=800,
    classes=COCO_CLASSES,
    source_format="torchvision",
    aliases=("coco",),
    source_title=_DIGEST_SOURCE,
    license=_LICENSE,
    license_source=_LICENSE_SOURCE,
)
"""The registered spec of torchvision's COCO `maskrcnn_resnet50_fpn_v2` checkpoint
(`weights="coco"`)."""
weights_lib.register_weights(COCO_WEIGHTS, overwrite=True)
weights_lib.register_weights(COCO_V2_WEIGHTS, overwrite=True)

_BUILDER_DOC = """
    Args:
        weights: None (random), ``"coco"`` (torchvision's COCO model; any name registered
            for the architecture in [lambda_keras.zoo.weights][lambda_keras.zoo.weights]), or a
            path: a ``.weights.h5`` written by ``convert_torchvision`` or ``save_weights``.
        num_classes: Object classes, background not counted; default the weights' (90 for
            COCO: its ids 1-90, torchvision's 91 labels).
        reset_class_layers: With ``weights``, load everything but the class-specific layers
            ([CLASS_LAYERS][lambda_keras.detection.torchvision.mask_rcnn.CLASS_LAYERS]), which
            start afresh for ``num_classes`` (fine-tuning).
        trainable_backbone_layers: ResNet stages that train, 0-5 (torchvision's default 3).
        **kwargs: [MaskRCNN][lambda_keras.detection.MaskRCNN]'s settings
            (``score_threshold``, ``max_detections``, ...).

    Returns:
        A built ``MaskRCNN``: images ``[batch, height, width, 3]`` (or ``{"images",
        "image_sizes"}``) in, detections out; [detect][lambda_keras.detection.detect.detect]
        serves a photo of any size.
"""


def maskrcnn_resnet50_fpn(
    weights: str | os.PathLike | None = None,
    num_classes: int | None = None,
    *,
    reset_class_layers: bool = False,
    trainable_backbone_layers: int = 3,
    **kwargs,
) -> MaskRCNN:
    """torchvision's ``maskrcnn_resnet50_fpn`` (v1; COCO AP in ``COCO_WEIGHTS.metrics``) as a
    [MaskRCNN][lambda_keras.detection.MaskRCNN] (module docstring).

    Examples:
        ```python
        import numpy as np

        from lambda_keras.detection import detect, maskrcnn_resnet50_fpn

        # downloaded, checked, converted once
        model = maskrcnn_resnet50_fpn(weights="coco")
        photo = np.zeros((480, 640, 3), "uint8")  # any uint8 RGB photo, any size
        # NumPy boxes, scores, classes, masks in its pixels
        found = detect(model, photo)
        ```
    """
    return _torchvision_mask_rcnn(
        V1, weights, num_classes, reset_class_layers, trainable_backbone_layers, kwargs
    )


def maskrcnn_resnet50_fpn_v2(
    weights: str | os.PathLike | None = None,
    num_classes: int | None = None,
    *,
    reset_class_layers: bool = False,
    trainable_backbone_layers: int = 3,
    **kwargs,
) -> MaskRCNN:
    """torchvision's ``maskrcnn_resnet50_fpn_v2`` (COCO AP in ``COCO_V2_WEIGHTS.metrics``) as a
    [MaskRCNN][lambda_keras.detection.MaskRCNN]: v1 with batch norm in the FPN and the heads
    (``TORCHVISION_V2_RULES``) and a backbone whose batch norm trains.

    Examples:
        ```python
        import numpy as np

        from lambda_keras.detection import detect, maskrcnn_resnet50_fpn_v2

        model = maskrcnn_resnet50_fpn_v2(weights="coco")
        found = detect(model, np.zeros((480, 640, 3), "uint8"))
        ```
    """
    return _torchvision_mask_rcnn(
        V2, weights, num_classes, reset_class_layers, trainable_backbone_layers, kwargs
    )


maskrcnn_resnet50_fpn.__doc__ += _BUILDER_DOC
maskrcnn_resnet50_fpn_v2.__doc__ += _BUILDER_DOC


def _torchvision_mask_rcnn(
    variant: TorchvisionVariant,
    weights,
    num_classes,
    reset_class_layers: bool,
    trainable_backbone_layers: int,
    kwargs: dict,
) -> MaskRCNN:
    """What both builders do, for ``variant``."""
    classes = COCO_CLASSES if num_classes is None else num_classes
    if isinstance(classes, bool) or not isinstance(classes, int) or classes < 1:
        raise ValueError(f"`num_classes` must be a positive int; received {num_classes!r}.")
    resolved = _resolve(weights, variant.architecture)
    if resolved is not None and not reset_class_layers:
        _check_weight_classes(weights, resolved, classes)
    coco = classes == COCO_CLASSES  # COCO's label layout: the classes are COCO's categories
    # On JAX, initial values from NumPy (no compile per shape); zeros where the file's follow.
    with initial_values_on_host(overwritten=resolved is not None and not reset_class_layers):
        model = _build(variant, classes, trainable_backbone_layers, coco, kwargs)
    if resolved is None:
        return model
    target = model
    if reset_class_layers:
        with initial_values_on_host(overwritten=True):
            target = _build(
                variant, _file_classes(resolved), trainable_backbone_layers, False, kwargs
            )
    if isinstance(resolved, weights_lib.WeightsSpec):
        weights_lib.load_registered(target, resolved)
    else:
        weights_lib.load_into(target, resolved, variant.architecture)
    if reset_class_layers:
        _copy_all_but_class_layers(target, model)
    return model


def _build(variant: TorchvisionVariant, classes, trainable_layers, coco: bool, kwargs) -> MaskRCNN:
    settings = {**variant.rules, **kwargs}
    backbone = resnet50_backbone(
        trainable_layers,
        variant.backbone_epsilon,
        frozen_batch_norm=variant.frozen_batch_norm,
    )
    model = MaskRCNN(
        backbone,
        classes,
        transform=TorchvisionTransform(),
        categories=coco_class_categories() if coco else None,
        name=variant.architecture,
        **settings,
    )
    model.build((None, None, None, 3))
    return model


def _resolve(weights, architecture: str) -> weights_lib.WeightsSpec | str | None:
    """None, a registered spec (``"coco"``) or an existing ``.weights.h5`` path."""
    if weights is not None and not isinstance(weights, (str, os.PathLike)):
        raise TypeError(
            f"`weights` must be None, 'coco' or a path to a .weights.h5 file; received {weights!r}."
        )
    try:
        resolved = weights_lib.resolve_weights(weights, architecture)
    except ValueError as err:
        raise _not_weights(weights, f" ({err})") from err
    if isinstance(resolved, str) and not resolved.endswith(".weights.h5"):
        raise _not_weights(resolved)
    return resolved


def _not_weights(received, detail: str = "") -> ValueError:
    return ValueError(
        "`weights` must be None, 'coco' or an existing .weights.h5 file (convert a torchvision "
        ".pth with python -m lambda_keras.detection.convert_torchvision); received "
        f"{os.fspath(received)!r}.{detail}"
    )


def _check_weight_classes(weights, resolved, classes: int) -> None:
    if isinstance(resolved, weights_lib.WeightsSpec) and classes != resolved.classes:
        raise ValueError(
            f"weights={weights!r} has {resolved.classes} classes (torchvision's 91 labels "
            f"without the background); received num_classes={classes}. To fine-tune on "
            f"{classes} classes, pass reset_class_layers=True: the class-specific layers "
            "(box_head logits and deltas, mask_head logits) then start afresh and the rest loads."
        )


def _file_classes(resolved) -> int:
    """The classes of weights: a registered spec's, or read from a file's box head logits."""
    if isinstance(resolved, weights_lib.WeightsSpec):
        return resolved.classes
    import h5py

    with h5py.File(resolved, "r") as f:
        found = []
        f.visititems(
            lambda name, item: (
                found.append(item.shape[-1])
                if "box_head" in name and "logits" in name and name.endswith("vars/1")
                else None
            )
        )
    if not found:
        raise ValueError(
            f"{resolved!r} holds no box_head logits: not a maskrcnn_resnet50_fpn file."
        )
    return int(found[0]) - 1


def is_class_layer(variable) -> bool:
    """Whether ``variable`` belongs to one of
    [`CLASS_LAYERS`][lambda_keras.detection.torchvision.mask_rcnn.CLASS_LAYERS]."""
    return any(f"/{layer}/" in f"/{variable.path}" for layer in CLASS_LAYERS)


def _copy_all_but_class_layers(source: keras.Model, target: keras.Model) -> None:
    for src, dst in zip(source.weights, target.weights, strict=True):
        if not is_class_layer(dst):
            dst.assign(src)
