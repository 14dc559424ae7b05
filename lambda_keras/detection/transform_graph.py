"""The transforms' resizing inside TensorFlow graphs, where a photo's size is known only at run
time: ``tf.data`` pipelines
([`lambda_keras.training.detection.datasets.coco`][lambda_keras.training.detection.datasets.coco])
and SavedModel / LiteRT serving
([`lambda_keras.detection.serving`][lambda_keras.detection.serving]). The same rules as the
transforms' ``resized_size``
([`lambda_keras.detection.transform`][lambda_keras.detection.transform]), on tensors.
"""

from __future__ import annotations

from lambda_keras.backend.requirements import require_tensorflow

require_tensorflow("lambda_keras.detection.transform_graph", "resizes inside TensorFlow graphs")

import tensorflow as tf  # noqa: E402

__all__ = ["letterbox_size", "resize", "torchvision_resize"]


def letterbox_size(shape: tf.Tensor, image_size: int, jitter: tf.Tensor | float = 1.0):
    """The letterbox rule: ``shape`` ``(height, width)`` scaled so that the longer side is
    ``image_size`` (times ``jitter``, training's scale augmentation), each side rounded and at
    least 1.

    Returns:
        ``(scale float32, size int32 [2])``.
    """
    shape = tf.cast(shape, tf.float32)
    scale = image_size / tf.reduce_max(shape) * jitter
    return scale, tf.maximum(tf.cast(tf.round(shape * scale), tf.int32), 1)


def torchvision_resize(
    image: tf.Tensor, min_size: int = 800, max_size: int = 1333, float64: bool = True
):
    """Resize one ``[height, width, 3]`` image as torchvision's ``GeneralizedRCNNTransform``
    does: scale ``min(min_size / shorter, max_size / longer)`` (float64), each side
    ``floor(side * scale)`` and at least 1 (as
    [`TorchvisionTransform.resized_size`][lambda_keras.detection.transform.TorchvisionTransform.resized_size]),
    bilinear without antialiasing (``align_corners=False``).

    ``float64=False`` computes the sizes in integers instead, ``floor(side * min_size /
    shorter)`` exactly (LiteRT has no float64 kernels). torchvision's float64 product is
    sometimes just below a whole number it should reach: a shorter side of 97 pixels becomes
    799 there, 800 here (397 of the shorter sides 1-7,999 do so).

    Returns:
        ``(resized float32 [h, w, 3], (h, w) int32)``.
    """
    if float64:
        shape = tf.cast(tf.shape(image)[:2], tf.float64)
        scale = tf.minimum(min_size / tf.reduce_min(shape), max_size / tf.reduce_max(shape))
        size = tf.cast(tf.floor(shape * scale), tf.int32)
    else:
        shape = tf.shape(image)[:2]
        short, long = tf.reduce_min(shape), tf.reduce_max(shape)
        by_short = min_size * long <= max_size * short  # min_size / short is the smaller scale
        size = tf.where(by_short, shape * min_size // short, shape * max_size // long)
    size = tf.maximum(size, 1)  # a photo over max_size times longer than it is short
    resized = tf.image.resize(tf.cast(image, tf.float32), size, method="bilinear")
    return resized, size


def resize(transform, image: tf.Tensor, float64: bool = True):
    """``(resized float32 [h, w, 3], (h, w) int32)``: one photo resized by ``transform``'s own
    rule (its ``graph_resize``; ``float64`` as in
    [`torchvision_resize`][lambda_keras.detection.transform_graph.torchvision_resize]). Any
    object with ``graph_resize`` is a transform here: the rule belongs to the transform."""
    if not callable(getattr(transform, "graph_resize", None)):
        raise TypeError(
            "`transform` must be an input transform (with `graph_resize`); received "
            f"{type(transform).__name__}."
        )
    return transform.graph_resize(image, float64)
