"""Average pooling with TensorFlow's values on every backend: with ``"same"`` padding each
window averages the cells inside the map.

Keras 3.15.1 on PyTorch pads a side more than the other (an even map, a 3 x 3 pool of stride 2:
the paper's LambdaResNets after a strided lambda layer) by repeating the edge cell, which it
then counts twice: other values than TensorFlow's and JAX's, and a padding whose gradient
PyTorch 2.11's Inductor cannot compile (a wrong memory order in its ``replication_pad2d``
backward). The project's layers use the pooling here; Keras' own is left as it is for users'
models ([`torch_channels_last`][lambda_keras.backend.torch_channels_last]).
"""

from __future__ import annotations

import functools

import keras
import numpy as np
from keras import ops

from lambda_keras import _validation as v
from lambda_keras.backend.torch_channels_last import same_padding

__all__ = ["AveragePooling2D", "average_pool"]


def average_pool(inputs, pool_size: int, strides: int, padding: str = "valid"):
    """``keras.ops.average_pool`` of channels-last maps, ``"same"`` padding as TensorFlow's on
    every backend: each window's mean over the cells inside the map.

    Args:
        inputs: ``[batch, height, width, channels]`` (or ``[batch, length, channels]``).
        pool_size: The window's side (a positive int).
        strides: The step between windows (a positive int).
        padding: ``"valid"`` or ``"same"`` (any case).

    Returns:
        ``[batch, out_height, out_width, channels]``, Keras' output shape.
    """
    pool_size = v.positive_int("pool_size", pool_size)
    strides = v.positive_int("strides", strides)
    padding = v.one_of("padding", padding.lower() if isinstance(padding, str) else padding,
                       ("valid", "same"))
    sizes = tuple(inputs.shape[1:-1])
    pads = None
    if padding == "same":
        pads = same_padding(sizes, (pool_size,) * len(sizes), (strides,) * len(sizes))
    if keras.backend.backend() != "torch" or all(a == b for a, b in pads or []):
        return ops.average_pool(inputs, pool_size, strides, padding)
    # Zeros around the map, the mean of each whole window, rescaled to the cells inside it (in
    # float32: one rounding to a half-precision input's dtype, as a pooling kernel does).
    padded = ops.pad(ops.cast(inputs, "float32"), [(0, 0), *pads, (0, 0)])
    means = ops.average_pool(padded, pool_size, strides, "valid")
    inside = functools.reduce(
        np.multiply.outer,
        [_cells_inside(n, pool_size, strides, p) for n, p in zip(sizes, pads, strict=True)],
    )
    scale = (pool_size ** len(sizes) / inside)[None, ..., None]
    return ops.cast(means * ops.convert_to_tensor(scale, "float32"), inputs.dtype)


def _cells_inside(size: int, pool_size: int, strides: int, pads: tuple[int, int]) -> np.ndarray:
    """How many cells of each window along one axis lie inside the map."""
    starts = np.arange(0, size + sum(pads) - pool_size + 1, strides) - pads[0]
    return np.minimum(starts + pool_size, size) - np.maximum(starts, 0)


@keras.saving.register_keras_serializable(package="lambda_keras")
class AveragePooling2D(keras.layers.AveragePooling2D):
    """``keras.layers.AveragePooling2D`` (channels-last maps) computing
    [`average_pool`][lambda_keras.layers.average_pooling.average_pool]: TensorFlow's values on
    every backend. Arguments, shapes and configuration are Keras' layer's.

    Input shape: ``[batch, height, width, channels]``; output ``[batch, out_height, out_width,
    channels]``.

    Examples:
        >>> import keras
        >>> import numpy as np
        >>> from lambda_keras.layers import AveragePooling2D
        >>> x = np.arange(16, dtype="float32").reshape(1, 4, 4, 1)
        >>> y = AveragePooling2D(3, strides=2, padding="same")(x)
        >>> keras.ops.convert_to_numpy(y)[0, :, :, 0].tolist()
        [[5.0, 6.5], [11.0, 12.5]]
    """

    def __init__(self, pool_size=2, strides=None, padding="valid", **kwargs):
        super().__init__(pool_size, strides, padding, **kwargs)
        if not all(v.is_int(s) and s > 0 for s in self.strides):  # Keras' takes 0, then fails
            raise ValueError(
                f"`strides` must be a positive integer; received strides={strides!r}."
            )
        square = len(set(self.pool_size)) == 1 and len(set(self.strides)) == 1
        self.padding = v.one_of("padding", str(self.padding).lower(), ("valid", "same"))
        if not square or self.data_format != "channels_last":
            raise ValueError(
                "lambda_keras.layers.AveragePooling2D takes square windows and strides on "
                f"channels-last maps; received pool_size={self.pool_size}, "
                f"strides={self.strides}, data_format={self.data_format!r}."
            )

    def call(self, inputs):
        return average_pool(inputs, self.pool_size[0], self.strides[0], self.padding)
