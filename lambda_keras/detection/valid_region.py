"""The part of a padded batch that holds each image: zeroing what lies beyond it.

torchvision pads each image only to a multiple of 32 and its convolutions see zeros beyond that
(their own padding). In a batch of fixed size (XLA, TPUs, a SavedModel of one static shape) the
padding is larger, and after a convolution with a bias or a batch norm it is no longer zero: a
3x3 convolution at an image's edge would read it. Zeroing every map beyond each image's part
before each such convolution gives inside the image what the image gives alone at its own size.
"""

from __future__ import annotations

import keras

__all__ = ["ZeroOutside", "zero_outside"]


def zero_outside(x, valid_sizes, stride: int):
    """``x`` ``[batch, height, width, channels]`` (a map of ``stride`` pixels per cell) with the
    cells at or beyond ``ceil(valid_sizes / stride)`` set to zero.

    Args:
        valid_sizes: ``[batch, 2]`` int, each image's ``(height, width)`` in pixels.
    """
    sizes = keras.ops.cast(valid_sizes, "int32")
    shape = keras.ops.shape(x)
    rows = keras.ops.arange(shape[1], dtype="int32")[None, :] * stride < sizes[:, :1]
    cols = keras.ops.arange(shape[2], dtype="int32")[None, :] * stride < sizes[:, 1:]
    mask = keras.ops.logical_and(rows[:, :, None], cols[:, None, :])
    return x * keras.ops.cast(mask, x.dtype)[..., None]


@keras.saving.register_keras_serializable(package="lambda_keras")
class ZeroOutside(keras.layers.Layer):
    """[`zero_outside`][lambda_keras.detection.valid_region.zero_outside] as a layer. Call: ``[x [b,
    h, w, c], valid_sizes [b, 2]]`` -> ``x``'s shape."""

    def __init__(self, stride: int, **kwargs):
        super().__init__(**kwargs)
        self.stride = int(stride)

    def call(self, inputs):
        x, valid_sizes = inputs
        return zero_outside(x, valid_sizes, self.stride)

    def compute_output_shape(self, input_shape):
        return input_shape[0]

    def get_config(self):
        return {**super().get_config(), "stride": self.stride}
