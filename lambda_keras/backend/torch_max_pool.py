"""Max pooling of channels-last maps on PyTorch as one operator, its gradient as another.

[`max_pool`][lambda_keras.backend.torch_channels_last.max_pool] hands PyTorch's kernel a
``[batch, height, width, channels]`` map as a ``channels_last`` view. Run eagerly that is all it
needs. In a compiled step (``torch_compiled_step``) Inductor writes its own code for the
pooling's gradient instead of calling PyTorch's kernel: for each input cell it gathers the
windows that cover it, reading the map in ``[batch, channels, height, width]`` order, which for
these maps is a transposed read. On 2 CPU cores the stem pool of the port of timm's
LambdaResNet-50 (8 maps of 112 x 112 x 64) took 45 ms that way, forward and gradient, and 9.5
ms as these two operators, which Inductor calls as they are (the same values and gradients:
PyTorch's kernels, ties included).

``lambda_keras::max_pool2d`` returns the pooled map and the position of each maximum, both
``[batch, out_height, out_width, channels]``; ``lambda_keras::max_pool2d_backward`` scatters a
gradient back to those positions. Imported only on the PyTorch backend.
"""

from __future__ import annotations

import torch

__all__ = ["max_pool2d"]


def max_pool2d(inputs: torch.Tensor, pool_size: tuple, strides: tuple) -> torch.Tensor:
    """``"valid"`` max pooling of ``inputs`` ``[batch, height, width, channels]`` by windows of
    ``pool_size`` ``(height, width)`` every ``strides`` ``(height, width)``: ``[batch,
    (height - pool_height) // stride_height + 1, ..., channels]``, contiguous."""
    pooled, _ = torch.ops.lambda_keras.max_pool2d(inputs, list(pool_size), list(strides))
    return pooled


def _pool_shape(inputs: torch.Tensor, pool: list[int], strides: list[int]) -> tuple:
    batch, height, width, channels = inputs.shape
    sides = zip((height, width), pool, strides, strict=True)
    rows, columns = ((n - p) // s + 1 for n, p, s in sides)
    return batch, rows, columns, channels


@torch.library.custom_op("lambda_keras::max_pool2d", mutates_args=())
def _max_pool2d(
    inputs: torch.Tensor, pool: list[int], strides: list[int]
) -> tuple[torch.Tensor, torch.Tensor]:
    pooled, positions = torch.ops.aten.max_pool2d_with_indices(
        inputs.permute(0, 3, 1, 2), pool, strides
    )
    return pooled.permute(0, 2, 3, 1).contiguous(), positions.permute(0, 2, 3, 1).contiguous()


@_max_pool2d.register_fake
def _max_pool2d_shapes(inputs, pool, strides):
    shape = _pool_shape(inputs, pool, strides)
    return inputs.new_empty(shape), inputs.new_empty(shape, dtype=torch.int64)


@torch.library.custom_op("lambda_keras::max_pool2d_backward", mutates_args=())
def _max_pool2d_backward(
    gradient: torch.Tensor,
    inputs: torch.Tensor,
    positions: torch.Tensor,
    pool: list[int],
    strides: list[int],
) -> torch.Tensor:
    def first(t):
        return t.permute(0, 3, 1, 2)

    result = torch.ops.aten.max_pool2d_with_indices_backward(
        first(gradient), first(inputs), pool, strides, [0, 0], [1, 1], False, first(positions)
    )
    return result.permute(0, 2, 3, 1).contiguous()


@_max_pool2d_backward.register_fake
def _max_pool2d_backward_shape(gradient, inputs, positions, pool, strides):
    return torch.empty_like(inputs, memory_format=torch.contiguous_format)


def _keep_for_backward(ctx, inputs, output) -> None:
    tensor, pool, strides = inputs
    ctx.save_for_backward(tensor, output[1])
    ctx.pool, ctx.strides = pool, strides


def _backward(ctx, gradient, _positions_gradient):
    tensor, positions = ctx.saved_tensors
    result = _max_pool2d_backward(gradient.contiguous(), tensor, positions, ctx.pool, ctx.strides)
    return result, None, None


_max_pool2d.register_autograd(_backward, setup_context=_keep_for_backward)
