"""SavedModel export of a Mask R-CNN for serving: one ``uint8`` image of any size in, its
detections in that image's pixels out.

Signature ``serving_default(image: uint8 [height, width, 3])`` returns ``boxes [D, 4]``
(``y1, x1, y2, x2`` in the image's pixels), ``scores [D]``, ``classes [D]`` (0-based labels,
-1 for padding), ``masks [D, height, width]`` (uint8 0/1, pasted into the image) and
``num_detections`` (the valid ones come first).

The model says how a photo becomes its input and how its outputs go back
(``model.input_transform(image_size)``, :mod:`lambda_keras.detection.transform`): with
``image_size`` the project's letterbox (the longer side to ``image_size``, padded, as in
evaluation); without it the model's own transform, e.g. torchvision's for
:func:`~lambda_keras.detection.maskrcnn_resnet50_fpn` (shorter side 800, longer at most 1333,
an 832 x 1344 batch or 1344 x 832 when the photo stands upright, masks pasted by torchvision's
rule). A model with ``categories`` (COCO's) also gets ``labels.json`` (``category_ids`` and
``class_names`` per class, the training script's format) in the SavedModel directory.
"""

from __future__ import annotations

import json
import os
import tempfile

import keras
import tensorflow as tf

__all__ = ["export_detector", "export_detector_litert"]


def export_detector(model: keras.Model, path: str, image_size: int | None = None) -> str:
    """Write ``model`` with its serving signature to ``path``; returns ``path``.

    Args:
        model: A :class:`~lambda_keras.detection.MaskRCNN` (called or fitted once).
        path: The SavedModel directory to write.
        image_size: The side the model detects at (a multiple of 64): each image is resized so
            that its longer side is ``image_size``, then padded to a square. None for a model
            that carries its own transform (torchvision's).
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

    A torchvision model's resized sides are computed in integers here (LiteRT has no float64
    kernels; see :func:`~lambda_keras.detection.transform.torchvision_resize`).
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
    if not isinstance(model, keras.Model) or not hasattr(model, "input_transform"):
        raise TypeError(f"`model` must be a MaskRCNN; received {type(model).__name__}.")
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"`path` must be a directory path; received {path!r}.")
    transform = model.input_transform(image_size)

    def on_canvas(resized, size, canvas):
        padded = tf.image.pad_to_bounding_box(resized, 0, 0, *canvas)
        return model(transform.model_inputs(padded, size), training=False)

    def detect(image):
        shape = tf.shape(image)[:2]
        resized, size = transform.resize(image, float64=float64)
        canvases, first = transform.canvases(size)
        if len(canvases) == 1:
            out = on_canvas(resized, size, canvases[0])
        else:  # the one that fits the photo's orientation
            out = tf.cond(
                first,
                lambda: on_canvas(resized, size, canvases[0]),
                lambda: on_canvas(resized, size, canvases[1]),
            )
        boxes, masks = transform.to_photo(out["boxes"][0], out["masks"][0], size, shape)
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
