"""A detector's input transform: how a photo becomes the model's input, and how the model's
boxes and masks go back into the photo (torchvision's ``GeneralizedRCNNTransform``'s job).

Each :class:`~lambda_keras.detection.MaskRCNN` owns one (``model.input_transform()``); serving
(:mod:`lambda_keras.detection.serving`) asks the model for it instead of knowing models apart.

* :class:`LetterboxTransform`: the project's rule, as in training and evaluation
  (:mod:`lambda_keras.detection.data.coco`): the longer side scaled to ``image_size``
  (:func:`letterbox_size`), the image padded at the bottom and right to a square; boxes scaled
  back and clipped to the photo, masks pasted by :func:`~lambda_keras.detection.ops.paste_masks`.
* :class:`TorchvisionTransform`: torchvision's rule (:func:`torchvision_resize`: shorter side
  800, longer at most 1333, float64 sizes), each image padded to a multiple of 32 inside a
  batch whose sides are multiples of 64 (832 x 1344, or 1344 x 832 for an upright photo);
  boxes scaled back per axis, masks pasted by
  :func:`~lambda_keras.detection.ops.paste_masks_torchvision` and thresholded at 0.5.

Transforms run inside the serving graph (TensorFlow: ``tf.image`` resizing).
"""

from __future__ import annotations

import keras
import tensorflow as tf

from lambda_keras import _validation as v
from lambda_keras.detection import ops
from lambda_keras.detection.image_size import check_image_size, round_up

__all__ = [
    "LetterboxTransform",
    "TorchvisionTransform",
    "letterbox_size",
    "torchvision_resize",
]


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
    ``floor(side * scale)``, bilinear without antialiasing (``align_corners=False``).

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
    resized = tf.image.resize(tf.cast(image, tf.float32), size, method="bilinear")
    return resized, size


class LetterboxTransform:
    """The project's transform at ``image_size`` (a multiple of 64): see the module docstring.

    Not saved with a model: a project ``MaskRCNN`` detects at any multiple of 64, so the size is
    chosen where the model is served (``export_detector(model, path, image_size)``).
    """

    size_divisible = None  # each image fills the square it is padded into

    def __init__(self, image_size: int):
        self.image_size = check_image_size(image_size)

    def resize(self, image: tf.Tensor, float64: bool = True):
        """``(resized float32 [h, w, 3], (h, w) int32)`` of one photo (``float64`` unused)."""
        del float64
        _, size = letterbox_size(tf.shape(image)[:2], self.image_size)
        return tf.image.resize(tf.cast(image, tf.float32), size), size

    def canvases(self, size: tf.Tensor) -> tuple[list[tuple[int, int]], tf.Tensor | None]:
        """``(canvases, first)``: the batch sizes an image of ``size`` may be padded to, and
        whether it is the first (None when there is one)."""
        del size
        return [(self.image_size, self.image_size)], None

    def model_inputs(self, padded: tf.Tensor, size: tf.Tensor):
        """The model's input for one padded image: the image alone (it fills the square,
        as in training)."""
        del size
        return padded[None]

    def to_photo(self, boxes: tf.Tensor, masks: tf.Tensor, size: tf.Tensor, shape: tf.Tensor):
        """``(boxes [D, 4] in the photo's pixels, bool masks [D, height, width])``."""
        del size
        scale, _ = letterbox_size(shape, self.image_size)
        boxes = ops.clip_boxes(boxes / scale, shape)
        return boxes, ops.paste_masks(masks, boxes, shape)


@keras.saving.register_keras_serializable(package="lambda_keras")
class TorchvisionTransform:
    """torchvision's ``GeneralizedRCNNTransform`` (module docstring).

    Args:
        min_size: The shorter side's target (torchvision's 800).
        max_size: The longer side's limit (torchvision's 1333).
        size_divisible: Each image is padded to a multiple of it (torchvision's 32); the model
            zeroes its maps beyond that part of a larger batch.
    """

    def __init__(self, min_size: int = 800, max_size: int = 1333, size_divisible: int = 32):
        self.min_size = v.positive_int("min_size", min_size)
        self.max_size = v.positive_int("max_size", max_size)
        self.size_divisible = v.positive_int("size_divisible", size_divisible)
        if self.max_size < self.min_size:
            raise ValueError(
                f"`max_size` must be at least `min_size`; received min_size={min_size}, "
                f"max_size={max_size}."
            )

    def resize(self, image: tf.Tensor, float64: bool = True):
        """:func:`torchvision_resize` of one photo."""
        return torchvision_resize(image, self.min_size, self.max_size, float64)

    def canvases(self, size: tf.Tensor) -> tuple[list[tuple[int, int]], tf.Tensor | None]:
        """A landscape batch for a landscape (or square) image, an upright one otherwise."""
        short, long = round_up(self.min_size), round_up(self.max_size)
        return [(short, long), (long, short)], size[0] <= size[1]

    def model_inputs(self, padded: tf.Tensor, size: tf.Tensor):
        return {"images": padded[None], "image_sizes": size[None]}

    def to_photo(self, boxes: tf.Tensor, masks: tf.Tensor, size: tf.Tensor, shape: tf.Tensor):
        ratio = tf.cast(shape, tf.float32) / tf.cast(size, tf.float32)
        boxes = boxes * tf.concat([ratio, ratio], 0)
        return boxes, ops.paste_masks_torchvision(masks, boxes, shape) >= 0.5

    def get_config(self) -> dict:
        return {
            "min_size": self.min_size,
            "max_size": self.max_size,
            "size_divisible": self.size_divisible,
        }

    @classmethod
    def from_config(cls, config: dict) -> TorchvisionTransform:
        return cls(**config)

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and other.get_config() == self.get_config()

    def __repr__(self) -> str:
        return f"TorchvisionTransform({self.get_config()})"
