"""SavedModel export of a Mask R-CNN for serving: one ``uint8`` image of any size in, its
detections in that image's pixels out.

Signature ``serving_default(image: uint8 [height, width, 3])`` returns ``boxes [D, 4]``
(``y1, x1, y2, x2`` in the image's pixels), ``scores [D]``, ``classes [D]`` (0-based labels,
-1 for padding), ``masks [D, height, width]`` (uint8 0/1, pasted into the image) and
``num_detections`` (the valid ones come first). The image is resized so that its longer side is
the model's ``image_size`` and padded, as in evaluation.
"""

from __future__ import annotations

import os

import keras
import tensorflow as tf

from lambda_keras.detection import ops
from lambda_keras.detection.image_size import check_image_size

__all__ = ["export_detector"]


def export_detector(model: keras.Model, path: str, image_size: int) -> str:
    """Write ``model`` with its serving signature to ``path``; returns ``path``.

    Args:
        model: A :class:`~lambda_keras.detection.MaskRCNN` (called or fitted once).
        path: The SavedModel directory to write.
        image_size: The side the model detects at (a multiple of 64): each image is resized so
            that its longer side is ``image_size``, then padded to a square.
    """
    if not isinstance(model, keras.Model):
        raise TypeError(f"`model` must be a MaskRCNN; received {type(model).__name__}.")
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"`path` must be a directory path; received {path!r}.")
    check_image_size(image_size)

    def detect(image):
        shape = tf.shape(image)[:2]
        scale = image_size / tf.cast(tf.reduce_max(shape), tf.float32)
        size = tf.maximum(tf.cast(tf.round(tf.cast(shape, tf.float32) * scale), tf.int32), 1)
        resized = tf.image.resize(tf.cast(image, tf.float32), size)
        padded = tf.image.pad_to_bounding_box(resized, 0, 0, image_size, image_size)
        out = model(padded[None], training=False)
        valid = out["valid"][0]
        boxes = ops.clip_boxes(out["boxes"][0] / scale, shape)
        masks = ops.paste_masks(out["masks"][0], boxes, shape) & valid[:, None, None]
        return {
            "boxes": tf.where(valid[:, None], boxes, 0.0),
            "scores": out["scores"][0],
            "classes": out["classes"][0],
            "masks": tf.cast(masks, tf.uint8),
            "num_detections": tf.reduce_sum(tf.cast(valid, tf.int32)),
        }

    archive = keras.export.ExportArchive()
    archive.track(model)
    spec = tf.TensorSpec([None, None, 3], tf.uint8, name="image")
    archive.add_endpoint("serving_default", detect, input_signature=[spec])
    archive.write_out(path, verbose=False)
    return path
