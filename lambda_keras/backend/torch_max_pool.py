"""Max pooling of channels-last maps on PyTorch as one operator, its gradient as another.

[`max_pool`][lambda_keras.backend.torch_channels_last.max_pool] hands PyTorch's kernel a
``[batch, height, width, channels]`` map as a ``channels_last`` view. Run eagerly that is all it
needs. In a compiled training step (``torch_compiled_step``) Inductor wrote its own code for the
pooling's gradient instead of calling PyTorch's kernel: for each input cell it gathers the
windows that cover it, reading the map in ``[batch, channels, height, width]`` order, which for
these maps is a transposed read. The stem pool of the port of timm's LambdaResNet-50 (8 maps of
112 x 112 x 64, 2 CPU cores) took several times as long that way, forward and gradient, as with
these two operators, which Inductor calls as they are: PyTorch's kernels, so the same values
and gradients, ties included.

``lambda_keras::max_pool2d`` returns the pooled map and, for each output cell, the flat index
``row * width + column`` of its maximum in the input map, both ``[batch, out_height,
out_width, channels]``; ``lambda_keras::max_pool2d_backward`` adds a gradient at those
positions. [`max_pool2d`][lambda_keras.backend.torch_max_pool.max_pool2d] takes them where a
gradient will be taken (grad mode on and the map requiring it), and PyTorch's own
``max_pool2d`` otherwise: for prediction (which Inductor fuses with the layers around it), for
``torch.func`` transforms (``vmap``, ``jvp``) and for exports, which know PyTorch's operator.
A gradient of the gradient (``create_graph=True``) is PyTorch's own, which is differentiable.
Imported only on the PyTorch backend.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

__all__ = ["max_pool2d"]


def max_pool2d(
    inputs: torch.Tensor, pool_size: tuple[int, int], strides: tuple[int, int]
) -> torch.Tensor:
    """``"valid"`` max pooling of ``inputs`` ``[batch, height, width, channels]`` by windows of
    ``pool_size`` ``(height, width)`` every ``strides`` ``(height, width)``: ``[batch,
    (height - pool_height) // stride_height + 1, ..., channels]``, contiguous.

    Raises:
        ValueError: A window larger than the map."""
    for side, size, window in zip(("height", "width"), inputs.shape[1:3], pool_size, strict=True):
        if size < window:
            raise ValueError(
                f"pool_size={tuple(pool_size)} does not fit the map: its {side} is {size}, "
                f"smaller than the window's {window} (a window must fit inside the map)."
            )
    if not _takes_a_gradient(inputs):
        return F.max_pool2d(inputs.permute(0, 3, 1, 2), pool_size, strides).permute(0, 2, 3, 1)
    pooled, _ = torch.ops.lambda_keras.max_pool2d(inputs, list(pool_size), list(strides))
    return pooled


def _takes_a_gradient(inputs: torch.Tensor) -> bool:
    """Whether autograd will take the pooling's gradient: grad mode on, the map requiring it,
    and no ``torch.func`` transform around it (those have their rules for PyTorch's own)."""
    return (
        torch.is_grad_enabled()
        and inputs.requires_grad
        and not torch._C._functorch.is_functorch_wrapped_tensor(inputs)
    )


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
    return _pytorch_backward(gradient, inputs, positions, pool, strides).contiguous()


def _pytorch_backward(gradient, inputs, positions, pool, strides) -> torch.Tensor:
    """PyTorch's gradient of the pooling, ``[batch, height, width, channels]``."""

    def first(t):
        return t.permute(0, 3, 1, 2)

    result = torch.ops.aten.max_pool2d_with_indices_backward(
        first(gradient), first(inputs), pool, strides, [0, 0], [1, 1], False, first(positions)
    )
    return result.permute(0, 2, 3, 1)


@_max_pool2d_backward.register_fake
def _max_pool2d_backward_shape(gradient, inputs, positions, pool, strides):
    return torch.empty_like(inputs, memory_format=torch.contiguous_format)


def _keep_for_backward(ctx, inputs, output) -> None:
    tensor, pool, strides = inputs
    ctx.save_for_backward(tensor, output[1])
    ctx.pool, ctx.strides = pool, strides


def _backward(ctx, gradient, _positions_gradient):
    tensor, positions = ctx.saved_tensors
    if torch.is_grad_enabled():  # create_graph=True: PyTorch's own, which is differentiable
        result = _pytorch_backward(gradient, tensor, positions, ctx.pool, ctx.strides)
    else:
        result = _max_pool2d_backward(
            gradient.contiguous(), tensor, positions, ctx.pool, ctx.strides
        )
    return result, None, None


_max_pool2d.register_autograd(_backward, setup_context=_keep_for_backward)
