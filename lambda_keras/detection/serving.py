"""SavedModel export of a Mask R-CNN for serving: one ``uint8`` image of any size in, its
detections in that image's pixels out.

Signature ``serving_default(image: uint8 [height, width, 3])`` returns ``boxes [D, 4]``
(``y1, x1, y2, x2`` in the image's pixels), ``scores [D]``, ``classes [D]`` (0-based labels,
-1 for padding), ``masks [D, height, width]`` (uint8 0/1, pasted into the image) and
``num_detections`` (the valid ones come first). The image is resized so that its longer side is
the model's ``image_size`` and padded, as in evaluation.

A model converted from torchvision
(:class:`~lambda_keras.detection.torchvision_mask_rcnn.TorchvisionMaskRCNN`) carries its own
preprocessing and needs no ``image_size``: the photo is resized by torchvision's rule (shorter
side 800, longer at most 1333) and detected on an 832 x 1344 batch (1344 x 832 when it stands
upright), masks pasted by torchvision's rule, ``classes`` 0-based (torchvision's label - 1);
a model with ``categories`` (COCO's) also gets ``labels.json`` (``category_ids`` and
``class_names`` per class, the training script's format) in the SavedModel directory.
"""

from __future__ import annotations

import json
import os
import tempfile

import keras
import tensorflow as tf

from lambda_keras.detection import ops
from lambda_keras.detection.image_size import check_image_size

__all__ = ["export_detector", "export_detector_litert"]


def export_detector(model: keras.Model, path: str, image_size: int | None = None) -> str:
    """Write ``model`` with its serving signature to ``path``; returns ``path``.

    Args:
        model: A :class:`~lambda_keras.detection.MaskRCNN` (called or fitted once).
        path: The SavedModel directory to write.
        image_size: The side the model detects at (a multiple of 64): each image is resized so
            that its longer side is ``image_size``, then padded to a square. None for a model
            that carries its preprocessing (torchvision's).
    """
    _write_saved_model(model, _detect_function(model, path, image_size, float64=True), path)
    categories = getattr(model, "categories", None)
    if categories:  # a converted COCO model: its classes' COCO ids and names beside it
        labels = {
            "category_ids": [c["id"] for c in categories],
            "class_names": [c["name"] for c in categories],
        }
        with open(os.path.join(path, "labels.json"), "w") as f:
            json.dump(labels, f)
    return path


def _write_saved_model(model, detect, path) -> None:
    archive = keras.export.ExportArchive()
    archive.track(model)
    spec = tf.TensorSpec([None, None, 3], tf.uint8, name="image")
    archive.add_endpoint("serving_default", detect, input_signature=[spec])
    archive.write_out(path, verbose=False)


def export_detector_litert(model: keras.Model, path: str, image_size: int | None = None) -> str:
    """Write ``model``'s serving function (as :func:`export_detector`'s) as a LiteRT flatbuffer
    ``path`` (``.tflite``) of TensorFlow Lite's built-in ops only; returns ``path``.

    A torchvision model's resized sides are computed in float32 here (LiteRT has no float64
    kernels; see :func:`~lambda_keras.detection.torchvision_mask_rcnn.torchvision_resize`).
    """
    if not str(path).endswith(".tflite"):
        raise ValueError(f"`path` must end in .tflite; received {path!r}.")
    detect = _detect_function(model, path, image_size, float64=False)
    with tempfile.TemporaryDirectory() as saved:
        _write_saved_model(model, detect, saved)
        converter = tf.lite.TFLiteConverter.from_saved_model(saved, ["serving_default"])
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
        flatbuffer = converter.convert()
    with open(path, "wb") as f:
        f.write(flatbuffer)
    return path


def _detect_function(model, path, image_size, float64: bool):
    from lambda_keras.detection.torchvision_mask_rcnn import TorchvisionMaskRCNN

    if not isinstance(model, keras.Model):
        raise TypeError(f"`model` must be a MaskRCNN; received {type(model).__name__}.")
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"`path` must be a directory path; received {path!r}.")
    if isinstance(model, TorchvisionMaskRCNN) and image_size is None:
        return _torchvision_detect(model, float64)
    if image_size is None:
        raise ValueError(
            "`image_size` is needed to export this MaskRCNN (the side it detects at, a multiple "
            "of 64); only models converted from torchvision carry their own preprocessing."
        )
    return _letterbox_detect(model, check_image_size(image_size))


def _letterbox_detect(model, image_size: int):
    def detect(image):
        shape = tf.shape(image)[:2]
        scale = image_size / tf.cast(tf.reduce_max(shape), tf.float32)
        size = tf.maximum(tf.cast(tf.round(tf.cast(shape, tf.float32) * scale), tf.int32), 1)
        resized = tf.image.resize(tf.cast(image, tf.float32), size)
        padded = tf.image.pad_to_bounding_box(resized, 0, 0, image_size, image_size)
        out = model(padded[None], training=False)
        boxes = ops.clip_boxes(out["boxes"][0] / scale, shape)
        return _outputs(out, boxes, ops.paste_masks(out["masks"][0], boxes, shape))

    return detect


def _torchvision_detect(model, float64: bool):
    from lambda_keras.detection.image_size import round_up
    from lambda_keras.detection.torchvision_mask_rcnn import MAX_SIZE, MIN_SIZE, torchvision_resize

    short, long = round_up(MIN_SIZE), round_up(MAX_SIZE)

    def on_canvas(resized, size, canvas):
        padded = tf.image.pad_to_bounding_box(resized, 0, 0, *canvas)
        return model({"images": padded[None], "image_sizes": size[None]}, training=False)

    def detect(image):
        shape = tf.shape(image)[:2]
        resized, size = torchvision_resize(image, float64=float64)
        out = tf.cond(
            size[0] <= size[1],
            lambda: on_canvas(resized, size, (short, long)),
            lambda: on_canvas(resized, size, (long, short)),
        )
        ratio = tf.cast(shape, tf.float32) / tf.cast(size, tf.float32)
        boxes = out["boxes"][0] * tf.concat([ratio, ratio], 0)
        masks = ops.paste_masks_torchvision(out["masks"][0], boxes, shape) >= 0.5
        return _outputs(out, boxes, masks)

    return detect


def _outputs(out: dict, boxes, masks) -> dict:
    """The signature's outputs from the model's ``out`` (a batch of one) with ``boxes`` and
    bool ``masks`` already in the photo's pixels; padding zeroed."""
    valid = out["valid"][0]
    return {
        "boxes": tf.where(valid[:, None], boxes, 0.0),
        "scores": out["scores"][0],
        "classes": out["classes"][0],
        "masks": tf.cast(masks & valid[:, None, None], tf.uint8),
        "num_detections": tf.reduce_sum(tf.cast(valid, tf.int32)),
    }
