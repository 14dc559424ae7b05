"""torchvision's ``maskrcnn_resnet50_fpn`` (v1) as a :class:`~lambda_keras.detection.MaskRCNN`,
with torchvision's COCO weights.

What makes it torchvision's and not the project's own Mask R-CNN is data
(:data:`TORCHVISION_RULES`), passed to the one ``MaskRCNN``:

* backbone: ResNet-50 v1.5 with frozen batch norm (:mod:`.resnet`); anchors on the cells'
  corners with rounded sides (``anchor_rule="torchvision"``); ROIAlign without the half-pixel
  shift (``roi_align_aligned=False``); proposals smaller than 1e-3 and detections smaller than
  1e-2 pixels dropped; RPN 2000/2000 (train) and 1000/1000 (test) boxes before/after NMS;
* input: torchvision's transform (:class:`~lambda_keras.detection.transform.TorchvisionTransform`:
  shorter side 800, longer at most 1333, each image padded to a multiple of 32; every map is
  zeroed beyond that part of a larger batch), so each image gives torchvision's detections for
  it alone, whatever the batch size (a static shape for XLA);
* classes: the project's 0-based classes, torchvision's label minus 1 (COCO's category id
  minus 1 for the COCO model); ``categories`` carries each class's COCO id and name.

Left as they are (training only): the mask targets are ROIAligned with the half-pixel rule
(torchvision: ``aligned=False`` and adaptive sampling), and RoIs are sampled as in
:mod:`lambda_keras.detection.targets`.

``weights="coco"`` selects the weights registered as ``maskrcnn_resnet50_fpn_coco``
(:mod:`lambda_keras.zoo.weights`): torchvision's published checkpoint, fetched once into the
Keras cache (``$KERAS_HOME``), checked against the SHA-256 prefix in its name (torch.hub's rule),
converted once (:mod:`.checkpoint`; PyTorch needed for that step only) and cached as a
``.weights.h5`` beside it; later calls read the converted file.
"""

from __future__ import annotations

import os

import keras

from lambda_keras.checkpoints import read_checkpoint
from lambda_keras.detection.fpn import FeaturePyramid  # noqa: F401  (registered for loading)
from lambda_keras.detection.mask_rcnn import MaskRCNN
from lambda_keras.detection.torchvision import checkpoint
from lambda_keras.detection.torchvision.categories import coco_class_categories
from lambda_keras.detection.torchvision.resnet import resnet50_backbone
from lambda_keras.detection.transform import TorchvisionTransform
from lambda_keras.zoo import weights as weights_lib

__all__ = [
    "ARCHITECTURE",
    "CLASS_LAYERS",
    "COCO_CLASSES",
    "COCO_WEIGHTS",
    "TORCHVISION_RULES",
    "is_class_layer",
    "maskrcnn_resnet50_fpn",
]

ARCHITECTURE = "maskrcnn_resnet50_fpn"
COCO_CLASSES = 90  # torchvision's 91 labels without the background
# The layers whose shapes depend on the classes: re-initialised when fine-tuning.
CLASS_LAYERS = ("box_head/logits", "box_head/deltas", "mask_head/logits")
# torchvision's rules as MaskRCNN settings (the backbone and categories come with the builder).
TORCHVISION_RULES = {
    "rpn_top_k": (2000, 2000, 1000, 1000),
    "anchor_rule": "torchvision",
    "roi_align_aligned": False,
    "proposal_min_size": 1e-3,
    "detection_min_size": 1e-2,
    "detection_candidates": 4000,
}


def _convert(model: keras.Model, path: str, spec: weights_lib.WeightsSpec) -> None:
    """A torchvision ``.pth`` into the built model (the registry's converter)."""
    del spec
    checkpoint.assign_checkpoint(model, read_checkpoint(path))


weights_lib.register_converter("torchvision", _convert)
COCO_WEIGHTS = weights_lib.WeightsSpec(
    name="maskrcnn_resnet50_fpn_coco",
    url="https://download.pytorch.org/models/maskrcnn_resnet50_fpn_coco-bf2d0c1e.pth",
    sha256="bf2d0c1e",  # torch.hub's rule: the prefix in the file's name
    hash_rule="torch_hub_prefix",
    architecture=ARCHITECTURE,
    input_size=800,
    classes=COCO_CLASSES,
    source_format="torchvision",
    aliases=("coco",),
    sha256_source="torchvision.models.detection.MaskRCNN_ResNet50_FPN_Weights.COCO_V1.url",
)
weights_lib.register_weights(COCO_WEIGHTS, overwrite=True)


def maskrcnn_resnet50_fpn(
    weights: str | os.PathLike | None = None,
    num_classes: int | None = None,
    *,
    reset_class_layers: bool = False,
    trainable_backbone_layers: int = 3,
    **kwargs,
) -> MaskRCNN:
    """torchvision's ``maskrcnn_resnet50_fpn`` (v1) as a built
    :class:`~lambda_keras.detection.MaskRCNN` (module docstring).

    Args:
        weights: None (random), ``"coco"`` (torchvision's COCO model; any name registered
            for ``"maskrcnn_resnet50_fpn"`` in :mod:`lambda_keras.zoo.weights`), or a path: a
            ``.weights.h5`` written by ``convert_torchvision`` or ``save_weights``.
        num_classes: Object classes, background not counted; default the weights' (90 for
            COCO: its ids 1-90, torchvision's 91 labels).
        reset_class_layers: With ``weights``, load everything but the class-specific layers
            (:data:`CLASS_LAYERS`), which start afresh for ``num_classes`` (fine-tuning).
        trainable_backbone_layers: ResNet stages that train, 0-5 (torchvision's default 3).
        **kwargs: :class:`~lambda_keras.detection.MaskRCNN`'s settings (``score_threshold``,
            ``max_detections``, ...).
    """
    classes = COCO_CLASSES if num_classes is None else num_classes
    if isinstance(classes, bool) or not isinstance(classes, int) or classes < 1:
        raise ValueError(f"`num_classes` must be a positive int; received {num_classes!r}.")
    resolved = _resolve(weights)
    if resolved is not None and not reset_class_layers:
        _check_weight_classes(weights, resolved, classes)
    coco = classes == COCO_CLASSES  # COCO's label layout: the classes are COCO's categories
    model = _build(classes, trainable_backbone_layers, coco, kwargs)
    if resolved is None:
        return model
    target = model
    if reset_class_layers:
        target = _build(_file_classes(resolved), trainable_backbone_layers, False, kwargs)
    if isinstance(resolved, weights_lib.WeightsSpec):
        weights_lib.load_registered(target, resolved)
    else:
        weights_lib.load_into(target, resolved, ARCHITECTURE)
    if reset_class_layers:
        _copy_all_but_class_layers(target, model)
    return model


@keras.saving.register_keras_serializable(package="lambda_keras", name="TorchvisionMaskRCNN")
class _SavedTorchvisionMaskRCNN:
    """Reads ``.keras`` files saved while torchvision's model was a ``MaskRCNN`` subclass
    (``TorchvisionMaskRCNN``, lambda_keras 0.x before its rules became settings): their
    config, with :data:`TORCHVISION_RULES` and torchvision's transform, is a ``MaskRCNN``'s,
    and their weights have the same paths."""

    @classmethod
    def from_config(cls, config: dict) -> MaskRCNN:
        transform = keras.saving.serialize_keras_object(TorchvisionTransform())
        return MaskRCNN.from_config({**TORCHVISION_RULES, **config, "transform": transform})

    def get_config(self) -> dict:  # never instantiated: from_config returns a MaskRCNN
        raise NotImplementedError


def _build(classes, trainable_backbone_layers, coco: bool, kwargs) -> MaskRCNN:
    settings = {**TORCHVISION_RULES, **kwargs}
    model = MaskRCNN(
        resnet50_backbone(trainable_backbone_layers),
        classes,
        transform=TorchvisionTransform(),
        categories=coco_class_categories() if coco else None,
        name=ARCHITECTURE,
        **settings,
    )
    model.build((None, None, None, 3))
    return model


def _resolve(weights) -> weights_lib.WeightsSpec | str | None:
    """None, a registered spec (``"coco"``) or an existing ``.weights.h5`` path."""
    if weights is not None and not isinstance(weights, (str, os.PathLike)):
        raise TypeError(
            f"`weights` must be None, 'coco' or a path to a .weights.h5 file; received {weights!r}."
        )
    try:
        resolved = weights_lib.resolve_weights(weights, ARCHITECTURE)
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
    """Whether ``variable`` belongs to one of :data:`CLASS_LAYERS`."""
    return any(f"/{layer}/" in f"/{variable.path}" for layer in CLASS_LAYERS)


def _copy_all_but_class_layers(source: keras.Model, target: keras.Model) -> None:
    for src, dst in zip(source.weights, target.weights, strict=True):
        if not is_class_layer(dst):
            dst.assign(src)
