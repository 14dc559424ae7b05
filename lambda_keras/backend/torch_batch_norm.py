"""Batch normalization of a training batch on PyTorch as one operator, its gradient as another.

Keras writes a training batch's normalization as its formula: the batch mean, the mean squared
deviation from it, then ``(x - mean) * rsqrt(variance + epsilon) * scale + offset``, each a
PyTorch operation of its own. Eagerly that is several passes over the map; in a compiled step
(``torch_compiled_step``) Inductor fuses them, but on a CPU its reductions over a channels-last
map's batch, rows and columns run one parallel region per block of channels, and its fused
gradient reads the map three times. PyTorch's own kernels (``native_batch_norm`` and its
backward) take the same channels-last map in one pass for the statistics and one for the
output, and as much for the gradient. On 2 AMD EPYC cores, a batch norm and SiLU forward and
backward on the larger maps of the port of timm's LambdaResNet-50 at batch 8, 224 px, compiled,
took a third to nine tenths of the time through these operators that it took through Keras'
formula (``benchmarks/bench_batch_norm.py``, the benchmarks page). timm's model runs PyTorch's
kernels too.

``lambda_keras::batch_norm_training`` returns the normalized map, the batch mean and the inverse
of ``sqrt(variance + epsilon)`` (the biased variance, as TensorFlow and JAX compute it: the mean
squared deviation from the mean, never ``E[x^2] - E[x]^2``);
``lambda_keras::batch_norm_training_backward`` gives the gradients of the map, scale and offset.
Inductor calls both as they are.

The project's [`BatchNormalization`][lambda_keras.layers.BatchNormalization] layer calls
[`batch_norm_training`][lambda_keras.backend.torch_batch_norm.batch_norm_training] for a
training batch (cast to float32 at least, as Keras' layer does) where
[`takes_the_operator`][lambda_keras.backend.torch_batch_norm.takes_the_operator] says so: a 4-D
map on a CPU normalized over its last axis, every such map when it runs eagerly (Keras' formula
is a dozen operators and as many passes over the map there), in a traced step only one large
enough to gain ([`MIN_VALUES`][lambda_keras.backend.torch_batch_norm.MIN_VALUES]), no
``torch.func`` transform around it, and the project's channels-last functions installed
(``LAMBDA_KERAS_TORCH_CHANNELS_LAST``,
[`torch_channels_last`][lambda_keras.backend.torch_channels_last]). On a GPU the layer keeps
Keras' formula, which Inductor fuses there (the compiled steps' GPU runs on the benchmarks page
were measured with it; the operators were not). Keras' own ``keras.layers.BatchNormalization``
is left as it is. A gradient of the gradient (``create_graph=True``) is PyTorch's own
``native_batch_norm_backward``, which is differentiable. Imported only on the PyTorch backend.
"""

from __future__ import annotations

import torch

__all__ = ["EAGER_EVERY_MAP", "MIN_VALUES", "batch_norm_training", "moved", "takes_the_operator"]

MIN_VALUES = 1 << 19
"""The fewest values (``batch * height * width * channels``) of a map that takes the operators
in a traced step (a compiled one). Each call costs a little beyond its kernels, where Inductor
fuses Keras' formula with the layers around it: on 2 AMD EPYC cores, a batch norm and SiLU
forward and backward, compiled, took longer through the operators on most maps of a 64 px
batch of 2 (at most ``[2, 32, 32, 64]``), and on ``[8, 7, 7, 512]``, and less on every map
from this many values on (``benchmarks/bench_batch_norm.py``, the benchmarks page). Smaller
maps keep Keras' formula there. A map that runs eagerly takes the operators whatever its
size (see [`EAGER_EVERY_MAP`][lambda_keras.backend.torch_batch_norm.EAGER_EVERY_MAP])."""

EAGER_EVERY_MAP = True
"""Whether a map that runs eagerly takes the operators whatever its size (eagerly Keras'
formula is a dozen operators, each a pass over the map: ``benchmarks/bench_batch_norm.py
--mode=eager``). False: the traced rule
([`MIN_VALUES`][lambda_keras.backend.torch_batch_norm.MIN_VALUES]) everywhere, so that a traced
step run as it is (no Inductor) computes Keras' eager step bit for bit, as the project's tests
of the traced steps compare them. With it on, a compiled step that runs a batch eagerly (past
its graphs' limit, or after a step it could not trace) normalizes that batch's small maps
through the kernels: the same values to float rounding."""


def takes_the_operator(inputs: torch.Tensor, axis: int) -> bool:
    """Whether [`batch_norm_training`][lambda_keras.backend.torch_batch_norm.batch_norm_training]
    serves a training batch ``inputs`` normalized over ``axis``: a 4-D floating map over its
    last axis, on a CPU, that runs eagerly or, traced, holds at least
    [`MIN_VALUES`][lambda_keras.backend.torch_batch_norm.MIN_VALUES] values; outside
    ``torch.func`` transforms, with the project's channels-last functions installed."""
    from lambda_keras.backend import torch_channels_last
    from lambda_keras.backend.stateless_steps import has_values

    return (
        isinstance(inputs, torch.Tensor)
        and inputs.ndim == 4
        and (inputs.numel() >= MIN_VALUES or (EAGER_EVERY_MAP and has_values(inputs)))
        and axis in (-1, 3)
        and inputs.is_floating_point()
        and inputs.device.type == "cpu"
        and torch._C._functorch.peek_interpreter_stack() is None
        and torch_channels_last.installed("batch_normalization")
    )


def batch_norm_training(
    inputs: torch.Tensor,
    scale: torch.Tensor | None,
    offset: torch.Tensor | None,
    epsilon: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A training batch ``inputs`` ``[batch, height, width, channels]`` normalized by its own
    statistics over batch, rows and columns, scaled by ``scale`` ``[channels]`` and shifted by
    ``offset`` ``[channels]`` (None: neither).

    Returns:
        The normalized map ``[batch, height, width, channels]`` (contiguous), and the batch mean
        and biased variance ``[channels]``, which take no gradient (the moving statistics'
        updates). The variance comes from the kernel's ``1 / sqrt(variance + epsilon)``, so it
        is exact to float rounding of ``variance + epsilon`` (a constant channel's: 0 or a few
        units in the last place of ``epsilon``), and never below 0.
    """
    channels = inputs.shape[-1]
    weight = inputs.new_ones(channels) if scale is None else scale
    bias = inputs.new_zeros(channels) if offset is None else offset
    outputs, mean, inverse = torch.ops.lambda_keras.batch_norm_training(
        inputs.contiguous(), weight, bias, float(epsilon)
    )
    variance = torch.clamp_min(inverse.detach().pow(-2) - epsilon, 0.0)
    return outputs, mean.detach(), variance


def moved(moving: torch.Tensor, batch: torch.Tensor, momentum: float) -> torch.Tensor:
    """A moving statistic after a batch, ``moving * momentum + batch * (1 - momentum)`` (Keras'
    rule) for finite values to float rounding (exactly ``moving`` at momentum 1 and ``batch`` at
    0), as one operator (``torch.lerp``) where the formula is three."""
    return torch.lerp(moving, batch, 1.0 - momentum)


def _first(x: torch.Tensor) -> torch.Tensor:
    """A ``[b, h, w, c]`` map as PyTorch's ``[b, c, h, w]`` view (channels-last memory)."""
    return x.permute(0, 3, 1, 2)


def _last(x: torch.Tensor) -> torch.Tensor:
    return x.permute(0, 2, 3, 1)


@torch.library.custom_op("lambda_keras::batch_norm_training", mutates_args=())
def _batch_norm_training(
    inputs: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, epsilon: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    outputs, mean, inverse = torch.ops.aten.native_batch_norm(
        _first(inputs), weight, bias, None, None, True, 0.0, epsilon
    )
    return _last(outputs).contiguous(), mean, inverse


@_batch_norm_training.register_fake
def _batch_norm_training_shapes(inputs, weight, bias, epsilon):
    channels = inputs.shape[-1]
    outputs = torch.empty_like(inputs, memory_format=torch.contiguous_format)
    return outputs, inputs.new_empty(channels), inputs.new_empty(channels)


@torch.library.custom_op("lambda_keras::batch_norm_training_backward", mutates_args=())
def _batch_norm_training_backward(
    gradient: torch.Tensor,
    inputs: torch.Tensor,
    weight: torch.Tensor,
    mean: torch.Tensor,
    inverse: torch.Tensor,
    epsilon: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    arguments = (gradient, inputs, weight, mean, inverse, epsilon)
    to_inputs, to_weight, to_bias = _pytorch_backward(*arguments)
    return to_inputs.contiguous(), to_weight, to_bias


def _pytorch_backward(gradient, inputs, weight, mean, inverse, epsilon):
    """PyTorch's gradient of a training batch norm: the map's ``[b, h, w, c]``, the weight's
    and the bias's ``[c]``."""
    to_inputs, to_weight, to_bias = torch.ops.aten.native_batch_norm_backward(
        _first(gradient), _first(inputs), weight, None, None, mean, inverse, True, epsilon,
        [True, True, True],
    )
    return _last(to_inputs), to_weight, to_bias


@_batch_norm_training_backward.register_fake
def _batch_norm_training_backward_shapes(gradient, inputs, weight, mean, inverse, epsilon):
    to_inputs = torch.empty_like(inputs, memory_format=torch.contiguous_format)
    return to_inputs, torch.empty_like(weight), torch.empty_like(weight)


def _keep_for_backward(ctx, inputs, output) -> None:
    tensor, weight, _bias, epsilon = inputs
    _outputs, mean, inverse = output
    ctx.save_for_backward(tensor, weight, mean, inverse)
    ctx.mark_non_differentiable(mean, inverse)
    ctx.epsilon = epsilon


def _backward(ctx, gradient, _mean_gradient, _inverse_gradient):
    tensor, weight, mean, inverse = ctx.saved_tensors
    arguments = (gradient.contiguous(), tensor, weight, mean, inverse, ctx.epsilon)
    if torch.is_grad_enabled():  # create_graph=True: PyTorch's own, which is differentiable
        gradients = _pytorch_backward(*arguments)
    else:
        gradients = _batch_norm_training_backward(*arguments)
    return (*gradients, None)


_batch_norm_training.register_autograd(_backward, setup_context=_keep_for_backward)
