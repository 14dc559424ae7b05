"""The lambda convolution as a layer with a convolution's signature: ``LambdaConv2D``,
``LambdaConv1D``.

A local-scope [`LambdaLayer`][lambda_keras.layers.LambdaLayer] (paper §3.3, Fig. 5) whose arguments
read like ``keras.layers.Conv2D``'s: ``filters`` output channels, a ``kernel_size`` that is the
scope of the position lambdas, ``strides`` 1 or 2 (2 adds the paper's 3x3 average pool of stride
2 after the layer, App. F.2, so that ``LambdaConv2D(256, 23, strides=2)`` replaces a strided
``Conv2D(256, 3, strides=2)`` shape for shape). The computation and the weights are exactly
``LambdaLayer``'s (this is a subclass).
"""

from __future__ import annotations

from collections.abc import Sequence

import keras

from lambda_keras import _validation as v
from lambda_keras.layers.average_pooling import average_pool
from lambda_keras.layers.lambda_layer import LambdaLayer

__all__ = ["CONV_IMPLEMENTATIONS", "LambdaConv1D", "LambdaConv2D"]

# The layer's names for its implementations, and the convolution-style aliases.
CONV_IMPLEMENTATIONS = {
    "auto": "auto",
    "conv3d": "conv",
    "conv": "conv",
    "depthwise": "depthwise",
    "einsum": "einsum",
}
"""`LambdaConv2D`'s `implementation` values and the layer's implementation each maps to
(`conv3d` is the paper's name for `conv`)."""


def _check_strides(strides, rank: int) -> int:
    """``strides``: the int 1 or 2, or ``rank`` of the same (a float, ``2.0``, or a bool is
    refused: Keras' convolutions take ints). Returns the int."""
    values = tuple(strides) if isinstance(strides, (tuple, list)) else (strides,)
    ok = (
        len(values) in (1, rank)
        and all(v.is_int(s) and s in (1, 2) for s in values)
        and len(set(values)) == 1
    )
    if not ok:
        raise ValueError(
            f"`strides` must be 1 or 2, as an int (2: a 3x3 average pool of stride 2 after the "
            f"layer) or a tuple of {rank} equal ints; received strides={strides!r}."
        )
    return int(values[0])


class _LambdaConv(LambdaLayer):
    """Shared by [`LambdaConv1D`][lambda_keras.layers.lambda_conv.LambdaConv1D] and
    [`LambdaConv2D`][lambda_keras.layers.lambda_conv.LambdaConv2D] (``rank`` spatial axes)."""

    rank = 2

    def __init__(
        self,
        filters: int,
        kernel_size: int | Sequence[int] = 23,
        strides: int = 1,
        padding: str = "same",
        *,
        key_dim: int = 16,
        num_heads: int = 4,
        intra_depth: int = 1,
        implementation: str = "auto",
        use_bias: bool = False,
        kernel_regularizer: str | keras.regularizers.Regularizer | None = None,
        batch_norm_momentum: float = 0.99,
        batch_norm_epsilon: float = 1e-3,
        **kwargs,
    ):
        if padding != "same":
            raise ValueError(
                f"`padding` must be 'same' for {type(self).__name__}: a lambda convolution sees "
                f"its whole scope, cropped at the borders; received padding={padding!r}."
            )
        strides = _check_strides(strides, self.rank)
        filters = v.positive_int("filters", filters)
        kernel_size = v.odd_window("kernel_size", kernel_size, self.rank)
        v.one_of("implementation", implementation, tuple(CONV_IMPLEMENTATIONS))
        super().__init__(
            dim_out=filters,
            key_dim=key_dim,
            num_heads=num_heads,
            intra_depth=intra_depth,
            scope_size=kernel_size,
            implementation=CONV_IMPLEMENTATIONS[implementation],
            use_bias=use_bias,
            kernel_regularizer=kernel_regularizer,
            batch_norm_momentum=batch_norm_momentum,
            batch_norm_epsilon=batch_norm_epsilon,
            **kwargs,
        )
        self.filters = filters
        self.kernel_size = kernel_size
        self.strides = strides
        self.padding = padding
        self._conv_implementation = implementation

    def build(self, input_shape):
        if len(input_shape) != self.rank + 2:
            layout = "[batch, length, channels]"
            if self.rank == 2:
                layout = "[batch, height, width, channels]"
            raise ValueError(
                f"{type(self).__name__} takes inputs {layout}; received input shape "
                f"{tuple(input_shape)}."
            )
        super().build(input_shape)

    def call(self, inputs, training=None):
        y = super().call(inputs, training=training)
        if self.strides == 1:
            return y
        pool = average_pool(y, 3, strides=2, padding="same")
        return keras.ops.cast(pool, self.compute_dtype)

    def compute_output_shape(self, input_shape):
        shape = super().compute_output_shape(input_shape)
        if self.strides == 1:
            return shape
        spatial = [None if s is None else -(-s // 2) for s in shape[1:-1]]
        return (shape[0], *spatial, shape[-1])

    def get_config(self):
        config = keras.layers.Layer.get_config(self)
        config.update(
            {
                "filters": self.filters,
                "kernel_size": list(self.kernel_size),
                "strides": self.strides,
                "padding": self.padding,
                "key_dim": self.key_dim,
                "num_heads": self.num_heads,
                "intra_depth": self.intra_depth,
                "implementation": self._conv_implementation,
                "use_bias": self.use_bias,
                "kernel_regularizer": keras.regularizers.serialize(self.kernel_regularizer),
                "batch_norm_momentum": self.batch_norm_momentum,
                "batch_norm_epsilon": self.batch_norm_epsilon,
            }
        )
        return config


@keras.saving.register_keras_serializable(package="lambda_keras")
class LambdaConv2D(_LambdaConv):
    """A lambda convolution over images, with ``keras.layers.Conv2D``'s argument names.

    Input ``[batch, height, width, channels]``; output ``[batch, height', width', filters]``
    with ``height' = ceil(height / strides)``.

    Args:
        filters: Output channels (divisible by ``num_heads``).
        kernel_size: Odd scope of the position lambdas, an int or ``(height, width)``
            (paper default 23). Content lambdas always see the whole map.
        strides: 1, or 2 for a 3x3 average pool of stride 2 after the layer (App. F.2).
        padding: ``"same"`` only (the scope is cropped at the borders).
        key_dim: ``|k|``, the query/key depth (default 16).
        num_heads: ``|h|``, the query heads (default 4).
        intra_depth: ``|u|``, the intra-depth (default 1).
        implementation: ``"conv3d"`` (a 3-D ``keras.ops.conv``, the layer's ``"conv"``),
            ``"depthwise"`` (``keras.ops.depthwise_conv``), ``"einsum"`` or ``"auto"``; all
            give the same outputs.
        use_bias: Bias on the query/key/value projections (default False, as in the paper).
        kernel_regularizer: Regularizer of the projection kernel.
        batch_norm_momentum: Momentum of the query and value batch norms.
        batch_norm_epsilon: Epsilon of the query and value batch norms.

    Examples:
        >>> import numpy as np
        >>> from lambda_keras.layers import LambdaConv2D
        >>> # as keras.layers.Conv2D(256, 23, strides=2)
        >>> layer = LambdaConv2D(256, 23, strides=2)
        >>> tuple(layer(np.zeros((1, 28, 28, 128), "float32")).shape)
        (1, 14, 14, 256)
    """

    rank = 2


@keras.saving.register_keras_serializable(package="lambda_keras")
class LambdaConv1D(_LambdaConv):
    """A lambda convolution over sequences, with ``keras.layers.Conv1D``'s argument names.

    Input ``[batch, length, channels]``; output ``[batch, ceil(length / strides), filters]``. The
    arguments are [`LambdaConv2D`][lambda_keras.layers.lambda_conv.LambdaConv2D]'s (``kernel_size``
    an odd int; ``"conv3d"`` computes the sequence case with a 2-D ``keras.ops.conv``).
    """

    rank = 1
