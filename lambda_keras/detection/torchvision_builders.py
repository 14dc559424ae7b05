"""Builders of torchvision's detectors as Keras models, with torchvision's COCO weights.

``maskrcnn_resnet50_fpn(weights="coco")`` downloads torchvision's published checkpoint once,
checks it against the hash prefix in its file name (torch.hub's rule), converts it
(:mod:`lambda_keras.detection.convert_torchvision`, needs PyTorch) and caches the Keras weights
in ``~/.keras/models/lambda_keras/``; later calls read the cache (no PyTorch needed).
"""

from __future__ import annotations

import hashlib
import os

import keras

from lambda_keras.detection.coco_categories import coco_class_categories
from lambda_keras.detection.fpn import FeaturePyramid  # noqa: F401  (registered for loading)
from lambda_keras.detection.torchvision_mask_rcnn import TorchvisionMaskRCNN
from lambda_keras.detection.torchvision_resnet import resnet50_backbone

__all__ = ["CLASS_LAYERS", "COCO_CLASSES", "COCO_URL", "is_class_layer", "maskrcnn_resnet50_fpn"]

COCO_URL = "https://download.pytorch.org/models/maskrcnn_resnet50_fpn_coco-bf2d0c1e.pth"
COCO_CLASSES = 90  # torchvision's 91 labels without the background
# The layers whose shapes depend on the classes: re-initialised when fine-tuning.
CLASS_LAYERS = ("box_head/logits", "box_head/deltas", "mask_head/logits")


def maskrcnn_resnet50_fpn(
    weights: str | os.PathLike | None = None,
    num_classes: int | None = None,
    *,
    reset_class_layers: bool = False,
    trainable_backbone_layers: int = 3,
    **kwargs,
) -> TorchvisionMaskRCNN:
    """torchvision's ``maskrcnn_resnet50_fpn`` (v1) as a built
    :class:`~lambda_keras.detection.torchvision_mask_rcnn.TorchvisionMaskRCNN`.

    Args:
        weights: None (random), ``"coco"`` (torchvision's COCO model), or a path: a
            ``.weights.h5`` written by ``convert_torchvision`` or ``save_weights``.
        num_classes: Object classes, background not counted; default 90 (COCO's ids 1-90,
            torchvision's 91 labels).
        reset_class_layers: With ``weights``, load everything but the class-specific layers
            (:data:`CLASS_LAYERS`), which start afresh for ``num_classes`` (fine-tuning).
        trainable_backbone_layers: ResNet stages that train, 0-5 (torchvision's default 3).
        **kwargs: :class:`~lambda_keras.detection.MaskRCNN`'s settings (``score_threshold``,
            ``max_detections``, ...).
    """
    classes = COCO_CLASSES if num_classes is None else num_classes
    if isinstance(classes, bool) or not isinstance(classes, int) or classes < 1:
        raise ValueError(f"`num_classes` must be a positive int; received {num_classes!r}.")
    if weights is not None and not reset_class_layers:
        _check_weight_classes(weights, classes)
    coco = classes == COCO_CLASSES  # COCO's label layout: the classes are COCO's categories
    model = _build(classes, trainable_backbone_layers, coco, kwargs)
    if weights is None:
        return model
    path = _weights_file(weights)
    if not reset_class_layers:
        model.load_weights(path)
        return model
    source_classes = _file_classes(weights, path)
    source = _build(source_classes, trainable_backbone_layers, False, kwargs)
    source.load_weights(path)
    _copy_all_but_class_layers(source, model)
    return model


def _build(classes, trainable_backbone_layers, coco: bool, kwargs) -> TorchvisionMaskRCNN:
    model = TorchvisionMaskRCNN(
        resnet50_backbone(trainable_backbone_layers),
        classes,
        categories=coco_class_categories() if coco else None,
        name="maskrcnn_resnet50_fpn",
        **kwargs,
    )
    model.build((None, None, None, 3))
    return model


def _check_weight_classes(weights, classes: int) -> None:
    if weights == "coco" and classes != COCO_CLASSES:
        raise ValueError(
            f"weights='coco' has {COCO_CLASSES} classes (torchvision's 91 labels without the "
            f"background); received num_classes={classes}. To fine-tune on {classes} classes, "
            "pass reset_class_layers=True: the class-specific layers (box_head logits and "
            "deltas, mask_head logits) then start afresh and the rest loads."
        )


def _weights_file(weights) -> str:
    if weights == "coco":
        return coco_weights()
    if not isinstance(weights, (str, os.PathLike)):
        raise TypeError(
            f"`weights` must be None, 'coco' or a path to a .weights.h5 file; received {weights!r}."
        )
    path = os.fspath(weights)
    if not path.endswith(".weights.h5") or not os.path.isfile(path):
        raise ValueError(
            f"`weights` must be None, 'coco' or an existing .weights.h5 file (convert a "
            f"torchvision .pth with python -m lambda_keras.detection.convert_torchvision); "
            f"received {path!r}."
        )
    return path


def _file_classes(weights, path: str) -> int:
    """The classes of a weights file: COCO's, or read from its box head's logits."""
    if weights == "coco":
        return COCO_CLASSES
    import h5py

    with h5py.File(path, "r") as f:
        found = []
        f.visititems(
            lambda name, item: (
                found.append(item.shape[-1])
                if "box_head" in name and "logits" in name and name.endswith("vars/1")
                else None
            )
        )
    if not found:
        raise ValueError(f"{path!r} holds no box_head logits: not a maskrcnn_resnet50_fpn file.")
    return int(found[0]) - 1


def is_class_layer(variable) -> bool:
    """Whether ``variable`` belongs to one of :data:`CLASS_LAYERS`."""
    return any(f"/{layer}/" in f"/{variable.path}" for layer in CLASS_LAYERS)


def _copy_all_but_class_layers(source: keras.Model, target: keras.Model) -> None:
    for src, dst in zip(source.weights, target.weights, strict=True):
        if not is_class_layer(dst):
            dst.assign(src)


def coco_weights(url: str = COCO_URL) -> str:
    """The Keras weights of torchvision's COCO model: the cached file, or downloaded (hash
    checked), converted and cached. Returns the ``.weights.h5`` path."""
    name = os.path.basename(url).removesuffix(".pth")
    cache = os.path.join(os.path.expanduser("~"), ".keras", "models", "lambda_keras")
    converted = os.path.join(cache, f"{name}.weights.h5")
    if os.path.isfile(converted):
        return converted
    try:
        import torch  # noqa: F401
    except ImportError as err:
        raise ImportError(
            "weights='coco' converts torchvision's checkpoint once and needs PyTorch for it "
            "(pip install torch); later calls read the converted file "
            f"{converted!r}."
        ) from err
    checkpoint = keras.utils.get_file(os.path.basename(url), url, cache_subdir="models")
    check_hash_prefix(checkpoint)
    from lambda_keras.detection.convert_torchvision import convert

    os.makedirs(cache, exist_ok=True)
    return convert("maskrcnn_resnet50_fpn", checkpoint, converted)


def check_hash_prefix(path: str) -> None:
    """torch.hub's rule: a file named ``<name>-<hex>.<ext>`` has a SHA-256 starting with
    ``<hex>``; raises ``ValueError`` (and removes the file) when it does not."""
    stem = os.path.basename(path).split(".")[0]
    prefix = stem.rsplit("-", 1)[-1] if "-" in stem else ""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    if not prefix or not digest.hexdigest().startswith(prefix):
        os.remove(path)
        raise ValueError(
            f"{path!r} has SHA-256 {digest.hexdigest()[:16]}..., not the {prefix!r}... its "
            "name promises: a corrupt or different download (removed; call again to retry)."
        )
