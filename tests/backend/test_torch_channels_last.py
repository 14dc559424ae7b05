"""Keras' PyTorch convolution, max and average pooling and batch norm without layout copies
(lambda_keras/backend/torch_channels_last.py): the same values and gradients as Keras' own
functions, results in ``[batch, height, width, channels]`` memory order, Keras' function where
ours does not apply, and the switch. The PyTorch tests run in the PyTorch child of
tests/test_backends.py; the padding rule runs everywhere."""

import os
import subprocess
import sys

import keras
import numpy as np
import pytest

from lambda_keras.backend import torch_channels_last as channels_last
from lambda_keras.backend.switches import read_switch

on_torch = pytest.mark.backends("torch")  # Keras' PyTorch backend functions


@pytest.mark.parametrize(
    "size, kernel, stride, dilation, expected",
    [
        ((8, 9), (3, 3), (1, 1), (1, 1), (1, 1)),
        ((8, 9), (1, 1), (2, 2), (1, 1), (0, 0)),  # a 1x1 downsample pads nothing
        ((9, 7), (3, 3), (2, 2), (1, 1), (1, 1)),  # odd sizes, stride 2: one each side
        ((8, 8), (3, 3), (2, 2), (1, 1), None),  # even size, stride 2: Keras pads one side more
        ((8, 8), (4, 4), (1, 1), (1, 1), None),  # even kernel
        ((8, 8), (3, 3), (1, 1), (2, 2), (2, 2)),
        ((None, 8), (3, 3), (1, 1), (1, 1), None),  # unknown size: Keras decides
    ],
)
def test_same_padding_is_per_side_only_where_keras_pads_both_sides_alike(
    size, kernel, stride, dilation, expected
):
    assert channels_last._symmetric_padding(size, kernel, stride, dilation) == expected


def _keras_and_ours(name):
    return channels_last._keras(name), getattr(channels_last, name)


def _grads(function, *arrays, **options):
    import torch

    tensors = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = function(*tensors, **options)
    weights = torch.linspace(-1, 1, out.numel()).reshape(out.shape)
    (out * weights).sum().backward()
    return out, [t.grad.numpy() for t in tensors]


def _ours_and_keras_own(compute):
    """``compute()`` with our functions installed, then with Keras' own (what it gives without
    ``import lambda_keras``); ours are put back either way."""
    ours = compute()
    try:
        channels_last.uninstall()
        return ours, compute()
    finally:
        channels_last.install()


def _is_channels_last_order(tensor) -> bool:
    return tensor.is_contiguous()  # [b, h, w, c] contiguous: no copy waits for the next op


CONV_CASES = [  # (input shape, kernel shape, strides, padding, dilation)
    ((2, 9, 14, 8), (3, 3, 8, 6), 1, "same", 1),  # landscape
    ((1, 15, 6, 8), (3, 3, 8, 6), 2, "same", 1),  # upright, odd sizes
    ((2, 16, 12, 8), (3, 3, 8, 6), 2, "same", 1),  # even sizes: Keras pads (falls back)
    ((2, 16, 12, 8), (1, 1, 8, 12), 2, "same", 1),  # 1x1 downsample
    ((1, 20, 20, 3), (7, 7, 3, 4), 2, "valid", 1),  # a stem
    ((1, 11, 13, 4), (3, 3, 4, 4), 1, "same", 2),  # dilated
    ((1, 10, 10, 4), (2, 2, 4, 4), 1, "same", 1),  # even kernel (falls back)
    ((2, 8, 8, 6), (3, 3, 2, 6), 1, "same", 1),  # groups
    ((1, 6, 6, 8), (3, 3, 1, 8), 1, "valid", 1),  # depthwise (groups = channels)
]


@on_torch
@pytest.mark.parametrize("x_shape, k_shape, strides, padding, dilation", CONV_CASES)
def test_conv_gives_keras_values_and_gradients_in_channels_last_order(
    x_shape, k_shape, strides, padding, dilation
):
    rng = np.random.default_rng(0)
    x = rng.normal(size=x_shape).astype("float32")
    k = rng.normal(size=k_shape).astype("float32")
    options = dict(strides=strides, padding=padding, dilation_rate=dilation)
    keras_conv, our_conv = _keras_and_ours("conv")
    expected, expected_grads = _grads(keras_conv, x, k, **options)
    out, grads = _grads(our_conv, x, k, **options)
    assert tuple(out.shape) == tuple(expected.shape)
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), atol=1e-5)
    for grad, expected_grad in zip(grads, expected_grads, strict=True):
        np.testing.assert_allclose(grad, expected_grad, rtol=1e-5, atol=1e-4)
    assert _is_channels_last_order(out)


@on_torch
def test_keras_ops_and_layers_reach_our_functions():
    from keras.src.backend.torch import nn

    assert read_switch(os.environ, channels_last.VARIABLE, "1", "1 or 0")
    assert nn.conv is channels_last.conv
    assert nn.max_pool is channels_last.max_pool
    assert nn.average_pool is channels_last.average_pool
    assert nn.batch_normalization is channels_last.batch_normalization
    # A ResNet stem: the pooled map and the convolution after it stay in [b, h, w, c] order
    # (Keras' own max-pool returns a transposed map that every later op would carry along).
    x = np.random.default_rng(1).normal(size=(1, 32, 48, 3)).astype("float32")
    stem = keras.Sequential(
        [
            keras.layers.Conv2D(8, 7, strides=2, padding="same"),
            keras.layers.BatchNormalization(),
            keras.layers.ReLU(),
            keras.layers.MaxPooling2D(3, strides=2),
            keras.layers.Conv2D(8, 3, padding="same"),
        ]
    )
    assert _is_channels_last_order(stem(x))


@on_torch
@pytest.mark.parametrize(
    "x_shape, pool, strides", [((2, 9, 14, 4), 3, 2), ((1, 12, 7, 3), 2, None)]
)
def test_max_pool_gives_keras_values_in_channels_last_order(x_shape, pool, strides):
    x = np.random.default_rng(2).normal(size=x_shape).astype("float32")
    keras_pool, our_pool = _keras_and_ours("max_pool")
    expected, expected_grads = _grads(keras_pool, x, pool_size=pool, strides=strides)
    out, grads = _grads(our_pool, x, pool_size=pool, strides=strides)
    np.testing.assert_array_equal(out.detach().numpy(), expected.detach().numpy())
    np.testing.assert_array_equal(grads[0], expected_grads[0])
    assert _is_channels_last_order(out)


@on_torch
def test_max_pool_with_same_padding_is_keras_own():
    x = np.random.default_rng(3).normal(size=(1, 7, 7, 2)).astype("float32")
    keras_pool, our_pool = _keras_and_ours("max_pool")
    expected = keras_pool(x, 3, 2, "same")
    np.testing.assert_array_equal(our_pool(x, 3, 2, "same").numpy(), expected.numpy())


@on_torch
@pytest.mark.parametrize(
    "x_shape, pool, strides, padding",
    [
        ((1, 9, 13, 3), 3, 2, "same"),  # odd sizes: one cell each side
        ((2, 6, 6, 4), 2, 2, "same"),  # the ResNet-D shortcut's pool (no padding)
        ((1, 7, 10, 2), 2, 2, "valid"),  # timm's lambda pool
        ((1, 12, 5, 2), 3, 1, "same"),  # upright
    ],
)
def test_average_pool_gives_keras_values_in_channels_last_order(x_shape, pool, strides, padding):
    x = np.random.default_rng(7).normal(size=x_shape).astype("float32")
    keras_pool, our_pool = _keras_and_ours("average_pool")
    options = {"pool_size": pool, "strides": strides, "padding": padding}
    expected, expected_grads = _grads(keras_pool, x, **options)
    out, grads = _grads(our_pool, x, **options)
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(grads[0], expected_grads[0], rtol=1e-6, atol=1e-7)
    assert _is_channels_last_order(out)


@on_torch
def test_average_pool_padding_one_side_more_is_keras_own():
    """Keras' values there (the edge repeated: not TensorFlow's, see
    lambda_keras/layers/average_pooling.py), so that a user's model computes what it computes
    without lambda_keras."""
    x = np.arange(16, dtype="float32").reshape(1, 4, 4, 1)
    keras_pool, our_pool = _keras_and_ours("average_pool")
    np.testing.assert_array_equal(
        our_pool(x, 3, 2, "same").numpy(), keras_pool(x, 3, 2, "same").numpy()
    )


@on_torch
def test_batch_norm_gives_keras_values_and_gradients():
    rng = np.random.default_rng(4)
    x = (rng.normal(size=(2, 5, 7, 6)) * 30 + 100).astype("float32")
    mean, variance = rng.normal(size=6).astype("float32"), rng.uniform(0.5, 2, 6).astype("float32")
    gamma, beta = rng.normal(size=6).astype("float32"), rng.normal(size=6).astype("float32")
    keras_norm, our_norm = _keras_and_ours("batch_normalization")

    def norm(function):
        import torch

        x_, gamma_, beta_ = (torch.tensor(a, requires_grad=True) for a in (x, gamma, beta))
        out = function(x_, torch.tensor(mean), torch.tensor(variance), -1, beta_, gamma_, 1e-3)
        (out * torch.linspace(-1, 1, out.numel()).reshape(out.shape)).sum().backward()
        return out.detach().numpy(), [t.grad.numpy() for t in (x_, gamma_, beta_)], out

    expected, expected_grads, _ = norm(keras_norm)
    got, grads, out = norm(our_norm)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-4)
    for grad, expected_grad in zip(grads, expected_grads, strict=True):
        np.testing.assert_allclose(grad, expected_grad, rtol=1e-5, atol=1e-4)
    assert _is_channels_last_order(out)


@on_torch
@pytest.mark.parametrize("with_scale_and_offset", [True, False])
def test_frozen_batch_norm_with_epsilon_0_gives_keras_values_and_gradients(with_scale_and_offset):
    """torchvision's frozen batch norm (``eps=0``), which PyTorch 2.11's ``F.batch_norm``
    refuses: Keras' values and gradients, in channels-last order, on every PyTorch."""
    import torch

    rng = np.random.default_rng(7)
    x = (rng.normal(size=(2, 6, 9, 5)) * 30 + 100).astype("float32")  # landscape map
    mean, variance = rng.normal(size=5).astype("float32"), rng.uniform(0.5, 2, 5).astype("float32")
    gamma, beta = rng.normal(size=5).astype("float32"), rng.normal(size=5).astype("float32")
    keras_norm, our_norm = _keras_and_ours("batch_normalization")

    def norm(function):
        x_, gamma_, beta_ = (torch.tensor(a, requires_grad=True) for a in (x, gamma, beta))
        parts = (beta_, gamma_) if with_scale_and_offset else (None, None)
        out = function(x_, torch.tensor(mean), torch.tensor(variance), -1, *parts, 0.0)
        (out * torch.linspace(-1, 1, out.numel()).reshape(out.shape)).sum().backward()
        grads = [t.grad for t in (x_, gamma_, beta_) if t.grad is not None]
        return out, [g.numpy() for g in grads]

    expected, expected_grads = norm(keras_norm)
    got, grads = norm(our_norm)
    assert got.dtype == torch.float32 and _is_channels_last_order(got)
    np.testing.assert_allclose(
        got.detach().numpy(), expected.detach().numpy(), rtol=1e-5, atol=1e-4
    )
    assert len(grads) == len(expected_grads) == (3 if with_scale_and_offset else 1)
    for grad, expected_grad in zip(grads, expected_grads, strict=True):
        np.testing.assert_allclose(grad, expected_grad, rtol=1e-5, atol=1e-4)


@on_torch
@pytest.mark.parametrize("epsilon", [0.0, 1e-5])
def test_a_users_batch_normalization_gives_what_it_gave_before_the_import(epsilon):
    """Keras' own ``BatchNormalization(epsilon=0)`` (and a usual epsilon), inference and
    training: the same outputs with our functions as with Keras' own."""
    rng = np.random.default_rng(8)
    x = rng.normal(size=(3, 7, 4, 6)).astype("float32")  # upright map
    weights = [rng.uniform(0.5, 2, 6), rng.normal(size=6), rng.normal(size=6)]
    weights.append(rng.uniform(0.5, 2, 6))  # gamma, beta, moving mean and variance

    def outputs():
        layer = keras.layers.BatchNormalization(epsilon=epsilon)
        layer.build(x.shape)
        layer.set_weights(weights)  # a training call moves the statistics
        return [keras.ops.convert_to_numpy(layer(x, training=t)) for t in (False, True)]

    ours, keras_own = _ours_and_keras_own(outputs)
    for got, expected in zip(ours, keras_own, strict=True):
        assert np.isfinite(got).all()
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@on_torch
@pytest.mark.parametrize("epsilon", [0.0, 1e-3])
@pytest.mark.parametrize(
    "x_dtype, statistics_dtype",
    [("float16", "float32"), ("float32", "float16"), ("bfloat16", "float32"),
     ("float32", "float64"), ("float16", "float16")],
)  # fmt: skip
def test_batch_norm_of_mixed_dtypes_gives_keras_dtype_and_values(
    x_dtype, statistics_dtype, epsilon
):
    """``keras.ops.batch_normalization`` of a half-precision map with float32 statistics (or
    the other way round): Keras' result dtype (that of ``x - mean``) and its values."""
    import torch

    rng = np.random.default_rng(11)
    x = torch.tensor(rng.normal(size=(2, 5, 3, 4)) * 3 + 1).to(getattr(torch, x_dtype))
    statistics = [rng.normal(size=4), rng.uniform(0.5, 2, 4), rng.normal(size=4),
                  rng.normal(size=4)]  # fmt: skip
    mean, variance, scale, offset = (
        torch.tensor(s).to(getattr(torch, statistics_dtype)) for s in statistics
    )
    keras_norm, our_norm = _keras_and_ours("batch_normalization")
    with torch.no_grad():
        expected = keras_norm(x, mean, variance, -1, offset, scale, epsilon)
        got = our_norm(x, mean, variance, -1, offset, scale, epsilon)
    assert got.dtype == expected.dtype == torch.result_type(x, mean)
    tolerance = 1e-5
    if got.dtype in (torch.float16, torch.bfloat16):
        tolerance = 1e-2
    elif statistics_dtype == "float16":
        tolerance = 1e-3  # Keras computes the multiplier from the statistics in their dtype
    np.testing.assert_allclose(
        got.float().numpy(), expected.float().numpy(), rtol=tolerance, atol=tolerance
    )


@on_torch
def test_batch_norm_of_a_training_batch_keeps_the_gradient_through_its_moments():
    """The batch's mean and variance depend on x: Keras' formula, whose gradient reaches them
    (PyTorch's inference batch norm would drop that part of the gradient)."""
    import torch

    x_np = np.random.default_rng(5).normal(size=(2, 4, 4, 3)).astype("float32")

    def grad(function):
        x = torch.tensor(x_np, requires_grad=True)
        mean, variance = x.mean((0, 1, 2)), x.var((0, 1, 2), unbiased=False)
        out = function(x, mean, variance, -1, None, None, 1e-3)
        (out * torch.linspace(-1, 1, out.numel()).reshape(out.shape)).sum().backward()
        return x.grad.numpy()

    keras_norm, our_norm = _keras_and_ours("batch_normalization")
    np.testing.assert_allclose(grad(our_norm), grad(keras_norm), rtol=1e-5, atol=1e-6)


def _out_major_order(kernel) -> bool:
    import torch

    return kernel.permute(3, 2, 0, 1).is_contiguous(memory_format=torch.channels_last)


@on_torch
def test_conv_kernels_lie_in_pytorch_weight_order_and_reach_the_convolution_as_a_view():
    layer = keras.layers.Conv2D(6, 3, padding="same")
    layer.build((None, 9, 14, 4))
    kernel = layer.kernel.value
    assert tuple(kernel.shape) == (3, 3, 4, 6) and not kernel.is_contiguous()
    assert _out_major_order(kernel)
    weights = channels_last._channels_last_weights(kernel)
    assert weights.data_ptr() == kernel.data_ptr()  # no copy
    counts = keras.Variable(np.zeros((3, 3, 4, 6), "int32"), trainable=False)
    assert counts.value.is_contiguous()  # integers keep Keras' order
    optimizer = keras.optimizers.SGD(momentum=0.9)
    optimizer.build([layer.kernel])  # the momentum: the kernel's order, fast elementwise updates
    assert all(_out_major_order(v.value) for v in optimizer.variables if len(v.shape) == 4)


@on_torch
def test_a_conv_layer_trains_saves_and_loads_in_that_order(tmp_path):
    """Values, gradients (in the kernel's own order), assignment and weight files: what Keras'
    order gives."""
    import torch

    rng = np.random.default_rng(6)
    x = rng.normal(size=(2, 9, 14, 4)).astype("float32")
    k = rng.normal(size=(3, 3, 4, 6)).astype("float32")
    model = keras.Sequential([keras.Input((9, 14, 4)), keras.layers.Conv2D(6, 3, use_bias=False)])
    model.layers[0].kernel.assign(k)
    kernel = model.layers[0].kernel.value
    assert _out_major_order(kernel)
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(kernel), k)
    out = model(x)
    (out * torch.linspace(-1, 1, out.numel()).reshape(out.shape)).sum().backward()
    expected, (_, expected_grad) = _grads(channels_last._keras("conv"), x, k)
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), atol=1e-5)
    np.testing.assert_allclose(kernel.grad.numpy(), expected_grad, rtol=1e-5, atol=1e-4)
    assert kernel.grad.stride() == kernel.stride()  # the gradient was not copied either
    model.save_weights(tmp_path / "conv.weights.h5")
    other = keras.Sequential([keras.Input((9, 14, 4)), keras.layers.Conv2D(6, 3, use_bias=False)])
    other.load_weights(tmp_path / "conv.weights.h5")
    np.testing.assert_array_equal(other.get_weights()[0], k)
    assert _out_major_order(other.layers[0].kernel.value)


@on_torch
def test_uninstall_gives_keras_its_functions_and_install_puts_ours_back():
    from keras.src.backend.torch import nn
    from keras.src.backend.torch.core import Variable

    keras_conv = channels_last._keras("conv")
    try:
        channels_last.uninstall()
        assert nn.conv is keras_conv
        layer = keras.layers.Conv2D(6, 3)
        layer.build((None, 8, 8, 4))
        assert layer.kernel.value.is_contiguous()  # Keras' own order
        assert channels_last.install({channels_last.VARIABLE: "0"}) == []
        assert channels_last.install({channels_last.VARIABLE: " Off"}) == []
        with pytest.raises(ValueError, match=r"CHANNELS_LAST='no': expected 1 .* or 0"):
            channels_last.install({channels_last.VARIABLE: "no"})
        assert nn.conv is keras_conv
    finally:
        installed = channels_last.install()
    assert "max_pool" in installed and nn.max_pool is channels_last.max_pool
    assert "_initialize" in installed and Variable._initialize is channels_last._initialize


@on_torch
def test_the_variable_keeps_keras_functions_from_the_first_import():
    script = (
        "import lambda_keras; from keras.src.backend.torch import nn; print(nn.conv.__module__)"
    )
    env = {**os.environ, "KERAS_BACKEND": "torch", channels_last.VARIABLE: "0"}
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip().splitlines()[-1] == "keras.src.backend.torch.nn"


@pytest.mark.backends("tensorflow", "jax")
def test_nothing_is_installed_on_other_backends():
    assert channels_last.install() == []


@on_torch
def test_a_keras_release_with_the_convolution_fix_keeps_its_own_convolution(monkeypatch):
    """Keras' fix (keras-team/keras#23199) passes channels-last maps to PyTorch itself; where
    the installed Keras has it (its ``_transpose_spatial_inputs`` takes
    ``channels_last_memory_format``), ours steps aside for the convolution only."""
    from keras.src.backend.torch import nn

    keras_conv = channels_last._keras("conv")

    def fixed(inputs, channels_last_memory_format=False):
        return inputs

    try:
        channels_last.uninstall()
        monkeypatch.setattr(nn, "_transpose_spatial_inputs", fixed)
        installed = channels_last.install()
        assert "conv" not in installed and nn.conv is keras_conv
        assert nn.max_pool is channels_last.max_pool  # the rest is still ours
    finally:
        channels_last.uninstall()
        monkeypatch.undo()
        assert "conv" in channels_last.install()


@on_torch
def test_a_keras_without_the_probed_helper_keeps_our_convolution(monkeypatch):
    """The probe of Keras' fix reads a private helper; a Keras without it imports as before,
    with ours in place."""
    from keras.src.backend.torch import nn

    monkeypatch.delattr(nn, "_transpose_spatial_inputs")
    assert not channels_last._keras_fixed_conv()
    try:
        channels_last.uninstall()
        assert "conv" in channels_last.install() and nn.conv is channels_last.conv
    finally:
        channels_last.uninstall()
        monkeypatch.undo()
        assert "conv" in channels_last.install()


def _users_model() -> keras.Model:
    keras.utils.set_random_seed(3)
    return keras.Sequential([
        keras.Input((15, 22, 3)),  # landscape, odd sizes: "same" pads one side more
        keras.layers.Conv2D(8, 3, strides=2, padding="same"),
        keras.layers.BatchNormalization(),
        keras.layers.ReLU(),
        keras.layers.MaxPooling2D(2),
        keras.layers.Conv2D(8, 3, padding="same", groups=2),
        keras.layers.DepthwiseConv2D(3, padding="valid"),
        keras.layers.GlobalAveragePooling2D(),
        keras.layers.Dense(4),
    ])


@on_torch
def test_a_users_model_computes_the_same_with_and_without_our_functions():
    """Outputs, a training step's loss and the weights after it, with ours installed and with
    Keras' own (``uninstall``: what the model gives without ``import lambda_keras``)."""
    x = np.random.default_rng(9).normal(size=(3, 15, 22, 3)).astype("float32")
    y = np.array([0, 3, 1])

    def run():
        model = _users_model()
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        model.compile(keras.optimizers.SGD(0.1, momentum=0.9), loss)
        before = keras.ops.convert_to_numpy(model(x, training=False))
        losses = [model.train_on_batch(x, y) for _ in range(2)]
        return before, losses, model.get_weights()

    ours, keras_own = _ours_and_keras_own(run)
    np.testing.assert_allclose(ours[0], keras_own[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ours[1], keras_own[1], rtol=1e-5)
    for got, expected in zip(ours[2], keras_own[2], strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
