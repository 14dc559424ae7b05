"""Keras' PyTorch backend without its layout copies: convolution, max and average pooling and
batch norm on channels-last maps, installed when ``lambda_keras`` is imported on PyTorch.

Keras 3.15 runs ``keras.ops.conv`` on PyTorch as a copy of the ``[batch, height, width,
channels]`` map into ``[batch, channels, height, width]`` order followed by a second copy back
into PyTorch's ``channels_last`` memory format, plus a third copy for ``padding="same"``;
``keras.ops.max_pool`` (and ``average_pool``) copies into channels-first order and returns a
map in that order, so every elementwise op after a ResNet's stem works on a transposed layout
that the next convolution copies again; ``keras.ops.batch_normalization`` makes three passes
and two new maps. On the converted ``maskrcnn_resnet50_fpn`` (one 800 x 1216 photo, 2 CPU
threads) the copies took 1.5 s of 3.5 s (``torch.profiler``: ``aten::copy_``). Keras fixed the
convolution upstream (keras-team/keras#23199, after 3.15.1); max-pooling is
keras-team/keras#23649.

The replacements here hand PyTorch the channels-last map as a view in ``channels_last`` memory
format, which its CPU and cuDNN kernels take as they are, so the results come back as
``[batch, height, width, channels]`` maps without a copy. They compute the same function with the
same kernels (the tests compare values and gradients with Keras' own). Each replaces Keras'
function only in the cases it handles and passes every other call to Keras': 2-D maps,
``channels_last``, ``"valid"`` padding or ``"same"`` padding that is symmetric (PyTorch's padding
argument; Keras' average pooling with uneven ``"same"`` padding also computes other values than
on TensorFlow and JAX, which the project's own layers avoid:
[`average_pooling`][lambda_keras.layers.average_pooling]), and for batch norm only statistics
that take no gradient (inference and frozen batch norm; a training batch's moments take a
gradient, and the project's [`BatchNormalization`][lambda_keras.layers.BatchNormalization] layer
normalizes such a batch with PyTorch's kernels itself,
[`torch_batch_norm`][lambda_keras.backend.torch_batch_norm]).

Convolution kernels are stored for it too: a Keras kernel ``[height, width, in, out]`` on PyTorch
(every 4-D floating variable, so the optimizer's momenta of a kernel alike) keeps its shape but
lies in memory as ``[out, height, width, in]``, the order of PyTorch's ``channels_last``
weights, so the convolution takes it as a view: no copy of the weights into
PyTorch's order on each call, and none of their gradient back (PyTorch gives a parameter's
gradient the parameter's memory order). Everything else sees the same values in the same shape:
saving, loading and assigning copy values, not memory. On the converted ``maskrcnn_resnet50_fpn``
these copies took 88 ms of a 512 px training step (``torch.profiler``, ``aten::copy_``).

``LAMBDA_KERAS_TORCH_CHANNELS_LAST=0`` before importing ``lambda_keras`` keeps Keras' functions
and memory order; the convolution is left alone where Keras already has the fix.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Mapping

from lambda_keras.backend.switches import read_switch

__all__ = [
    "VARIABLE",
    "average_pool",
    "batch_normalization",
    "conv",
    "install",
    "installed",
    "max_pool",
    "same_padding",
    "uninstall",
]

VARIABLE = "LAMBDA_KERAS_TORCH_CHANNELS_LAST"
"""``0`` (or ``off``, ``false``) keeps Keras' own PyTorch functions; unset or ``1``, the
project's (read once, when ``lambda_keras`` is imported on the PyTorch backend;
[`switches`][lambda_keras.backend.switches])."""

_KERAS = {}  # name -> Keras' own function, while ours is installed


def _pair(value, name: str) -> tuple[int, int]:
    """Keras' own reading of a 2-D size argument (an int or two)."""
    from keras.src.utils.argument_validation import standardize_tuple

    return standardize_tuple(value, 2, name)


def _keras(name: str):
    from keras.src.backend.torch import nn

    return _KERAS.get(name, getattr(nn, name))


def same_padding(sizes, kernel_sizes, strides, dilations=None) -> list[tuple[int, int]] | None:
    """Keras' ``"same"`` padding, ``(before, after)`` per axis (an odd total pads after more),
    on every backend; None where a size is unknown."""
    if None in sizes:
        return None
    dilations = dilations or (1,) * len(sizes)
    padding = []
    for size, kernel, stride, dilation in zip(sizes, kernel_sizes, strides, dilations, strict=True):
        total = max((-(-size // stride) - 1) * stride + (kernel - 1) * dilation + 1 - size, 0)
        padding.append((total // 2, total - total // 2))
    return padding


def _symmetric_padding(sizes, kernel_sizes, strides, dilations) -> tuple[int, int] | None:
    """PyTorch's per-side padding for Keras' ``"same"``, or None where Keras would pad one side
    more than the other (there Keras' own function pads)."""
    padding = same_padding(sizes, kernel_sizes, strides, dilations)
    if padding is None or any(before != after for before, after in padding):
        return None
    return tuple(before for before, _ in padding)


def conv(inputs, kernel, strides=1, padding="valid", data_format=None, dilation_rate=1):
    """``keras.ops.conv`` on PyTorch: ``[batch, height, width, channels]`` inputs and an
    ``[height, width, in / groups, out]`` kernel as channels-last views, no copy of the map."""
    from keras.src.backend import standardize_data_format
    from keras.src.backend.torch.core import convert_to_tensor

    inputs, kernel = convert_to_tensor(inputs), convert_to_tensor(kernel)
    arguments = (inputs, kernel, strides, padding, data_format, dilation_rate)
    if inputs.ndim != 4 or standardize_data_format(data_format) != "channels_last":
        return _keras("conv")(*arguments)
    strides, dilations = _pair(strides, "strides"), _pair(dilation_rate, "dilation_rate")
    pads = (0, 0)
    if padding == "same":
        pads = _symmetric_padding(inputs.shape[1:3], kernel.shape[:2], strides, dilations)
        if pads is None:
            return _keras("conv")(*arguments)
    import torch.nn.functional as F

    x = inputs.permute(0, 3, 1, 2)
    weights = _channels_last_weights(kernel)
    groups = x.shape[1] // weights.shape[1]
    if x.shape[1] % weights.shape[1]:
        return _keras("conv")(*arguments)  # Keras' error names the channels
    y = F.conv2d(x, weights, stride=strides, padding=pads, dilation=dilations, groups=groups)
    return y.permute(0, 2, 3, 1)


def _channels_last_weights(kernel):
    """``[out, in, kh, kw]`` weights in ``channels_last`` memory from Keras' ``[kh, kw, in, out]``
    kernel: a view where the kernel lies in that order (``_out_major``), else one copy, a 2-D
    transpose of the kernel seen as ``[kh * kw * in, out]`` (PyTorch copies a 2-D transpose in
    blocks, several times faster than the 4-D permutation it would copy otherwise, for the
    weights and, in the backward pass, for their gradient)."""
    import torch

    weights = kernel.permute(3, 2, 0, 1)
    if weights.is_contiguous(memory_format=torch.channels_last):
        return weights
    height, width, inputs, outputs = kernel.shape
    rows = kernel.reshape(-1, outputs).t().contiguous()
    return rows.reshape(outputs, height, width, inputs).permute(0, 3, 1, 2)


def max_pool(inputs, pool_size, strides=None, padding="valid", data_format=None):
    """``keras.ops.max_pool`` on PyTorch, ``"valid"`` 2-D pooling of channels-last maps as a
    channels-last view (PyTorch's pooling keeps the memory format); where a gradient will be
    taken, as one operator whose gradient a compiled step calls as PyTorch's kernel
    ([`torch_max_pool`][lambda_keras.backend.torch_max_pool])."""
    from keras.src.backend import standardize_data_format
    from keras.src.backend.torch.core import convert_to_tensor

    inputs = convert_to_tensor(inputs)
    if (
        inputs.ndim != 4
        or padding != "valid"
        or standardize_data_format(data_format) != "channels_last"
    ):
        return _keras("max_pool")(inputs, pool_size, strides, padding, data_format)
    from lambda_keras.backend.torch_max_pool import max_pool2d

    pool_size = _pair(pool_size, "pool_size")
    strides = pool_size if strides is None else _pair(strides, "strides")
    return max_pool2d(inputs, pool_size, strides)


def average_pool(inputs, pool_size, strides=None, padding="valid", data_format=None):
    """``keras.ops.average_pool`` on PyTorch, ``"valid"`` 2-D pooling of channels-last maps, or
    ``"same"`` where it pads both sides alike, as a channels-last view (the cells inside the map
    averaged, as Keras' function does). Keras' own function pads a side more than the other by
    repeating the edge, which counts the edge twice (TensorFlow and JAX leave the padding out):
    that case stays Keras' here, so a model gives what it gives without ``lambda_keras``; the
    project's layers use
    [`average_pool`][lambda_keras.layers.average_pooling.average_pool], TensorFlow's values on
    every backend."""
    from keras.src.backend import standardize_data_format
    from keras.src.backend.torch.core import convert_to_tensor

    inputs = convert_to_tensor(inputs)
    arguments = (inputs, pool_size, strides, padding, data_format)
    if inputs.ndim != 4 or standardize_data_format(data_format) != "channels_last":
        return _keras("average_pool")(*arguments)
    import torch.nn.functional as F

    pool_size = _pair(pool_size, "pool_size")
    strides = pool_size if strides is None else _pair(strides, "strides")
    pads = (0, 0)
    if padding == "same":
        pads = _symmetric_padding(inputs.shape[1:3], pool_size, strides, (1, 1))
        if pads is None:
            return _keras("average_pool")(*arguments)
    x = inputs.permute(0, 3, 1, 2)
    pooled = F.avg_pool2d(x, pool_size, strides, padding=pads, count_include_pad=False)
    return pooled.permute(0, 2, 3, 1)


def batch_normalization(x, mean, variance, axis, offset=None, scale=None, epsilon=1e-3):
    """``keras.ops.batch_normalization`` on PyTorch: one pass over a channels-last map when the
    statistics take no gradient (``torch.nn.functional.batch_norm``; with ``epsilon=0``, frozen
    batch norm as torchvision's detection models have it, ``_frozen_batch_norm``). The result
    has Keras' dtype, that of ``x - mean`` (a float16 map with float32 statistics gives
    float32), and every operand is computed in it."""
    import torch
    import torch.nn.functional as F
    from keras.src.backend.torch.core import convert_to_tensor

    x, mean, variance = (convert_to_tensor(t) for t in (x, mean, variance))
    statistics_train = torch.is_grad_enabled() and (mean.requires_grad or variance.requires_grad)
    dtype = torch.result_type(x, mean)  # Keras' formula starts with x - mean, then works in place
    if (
        x.ndim != 4 or axis not in (-1, 3) or statistics_train or mean.ndim != 1 or epsilon < 0
        or not dtype.is_floating_point
    ):  # fmt: skip
        return _keras("batch_normalization")(x, mean, variance, axis, offset, scale, epsilon)
    scale = None if scale is None else convert_to_tensor(scale).to(dtype)
    offset = None if offset is None else convert_to_tensor(offset).to(dtype)
    x, mean, variance = (t.to(dtype) for t in (x, mean, variance))
    if epsilon == 0:
        return _frozen_batch_norm(x, mean, variance, offset, scale)
    y = F.batch_norm(x.permute(0, 3, 1, 2), mean, variance, scale, offset, False, 0.0, epsilon)
    return y.permute(0, 2, 3, 1)


def _frozen_batch_norm(x, mean, variance, offset, scale):
    """Batch norm with ``epsilon=0`` as one multiply-add over the last axis, torchvision's
    ``FrozenBatchNorm2d`` formula: ``x * k + (offset - mean * k)`` with ``k = scale /
    sqrt(variance)``. PyTorch 2.11's ``F.batch_norm`` refuses ``eps=0`` ("batch_norm eps must be
    positive"; 2.14 takes it), so this path gives every supported PyTorch the same numbers."""
    import torch

    multiplier = variance.rsqrt()
    if scale is not None:
        multiplier = multiplier * scale
    shift = -mean * multiplier
    if offset is not None:
        shift = shift + offset
    return torch.addcmul(shift, x, multiplier)


def _out_major(parameter):
    """The same ``[kh, kw, in, out]`` parameter, laid out in memory as ``[out, kh, kw, in]``."""
    import torch

    memory = parameter.detach().permute(3, 0, 1, 2).contiguous()
    return torch.nn.Parameter(memory.permute(1, 2, 3, 0), requires_grad=parameter.requires_grad)


def _is_4d_floating(variable) -> bool:
    """Convolution kernels, and with them the optimizer's variables made in their image (an
    elementwise update of two tensors in different memory orders is several times slower): every
    4-D floating variable. Read from the tensor: Keras sets the variable's shape after this."""
    value = variable._value
    return value.ndim == 4 and value.is_floating_point()


def _initialize(variable, value) -> None:
    """Keras' ``Variable._initialize`` on PyTorch, 4-D floating variables in ``_out_major``
    order (a parameter Keras is handed to reuse stays that parameter)."""
    import torch

    _KERAS["_initialize"](variable, value)
    reused = isinstance(value, torch.nn.Parameter)
    if not reused and _is_4d_floating(variable) and variable._value.device.type != "meta":
        variable._value = _out_major(variable._value)


_OURS = {
    "conv": conv,
    "max_pool": max_pool,
    "average_pool": average_pool,
    "batch_normalization": batch_normalization,
}


def _keras_fixed_conv() -> bool:
    """Whether Keras' convolution already skips the copies (keras-team/keras#23199, whose
    ``_transpose_spatial_inputs`` takes ``channels_last_memory_format``; Keras 3.15.1, the
    latest release, has not). A Keras without that private helper keeps ours: nothing says it
    has the fix, and ours gives Keras' values on any layout."""
    from keras.src.backend.torch import nn

    helper = getattr(nn, "_transpose_spatial_inputs", None)
    if helper is None:
        return False
    return "channels_last_memory_format" in inspect.signature(helper).parameters


def install(environ: Mapping[str, str] = os.environ) -> list[str]:
    """Puts the functions above in place of Keras' when Keras runs on PyTorch, unless
    ``LAMBDA_KERAS_TORCH_CHANNELS_LAST=0``. Returns the names of those installed.

    Raises:
        ValueError: ``LAMBDA_KERAS_TORCH_CHANNELS_LAST`` holds something other than an on or
            off value ([`switches`][lambda_keras.backend.switches]; read on the PyTorch backend
            only).
    """
    import keras

    if keras.backend.backend() != "torch":
        return []
    expected = "1 (copy-free convolution, pooling and batch norm, the default) or 0 (Keras' own)"
    if not read_switch(environ, VARIABLE, "1", expected):
        return []
    from keras.src.backend.torch import nn
    from keras.src.backend.torch.core import Variable

    names = [n for n in _OURS if not (n == "conv" and _keras_fixed_conv())]
    for name in names:
        if name not in _KERAS:
            _KERAS[name] = getattr(nn, name)
        setattr(nn, name, _OURS[name])
    if "_initialize" not in _KERAS:
        _KERAS["_initialize"] = Variable._initialize
    Variable._initialize = _initialize
    return [*names, "_initialize"]


def installed(name: str) -> bool:
    """Whether the project's ``name`` (``"conv"``, ``"batch_normalization"``, ...) is in place
    of Keras' function now."""
    return name in _KERAS


def uninstall() -> None:
    """Gives Keras its own functions back (variables made meanwhile keep their memory order)."""
    from keras.src.backend.torch import nn
    from keras.src.backend.torch.core import Variable

    for name, function in list(_KERAS.items()):
        setattr(Variable if name == "_initialize" else nn, name, function)
        del _KERAS[name]
