"""AveragePooling2D / average_pool (lambda_keras/layers/average_pooling.py): TensorFlow's
values on every backend (a NumPy reference: each window's mean over the cells inside the map),
gradients, Keras' shapes and configuration, and bad arguments. Runs on TensorFlow and in the
JAX and PyTorch children of tests/test_backends.py (where Keras' own PyTorch pooling differs)."""

import re

import keras
import numpy as np
import pytest

from lambda_keras.layers import AveragePooling2D
from lambda_keras.layers.average_pooling import average_pool


def reference(x, pool, strides, padding):
    """TensorFlow's average pooling in NumPy over the middle axes of ``x``."""
    sizes = x.shape[1:-1]
    pads = [(0, 0)] * len(sizes)
    if padding == "same":
        pads = []
        for size in sizes:
            total = max((-(-size // strides) - 1) * strides + pool - size, 0)
            pads.append((total // 2, total - total // 2))
    counts = [(n + sum(p) - pool) // strides + 1 for n, p in zip(sizes, pads, strict=True)]
    out = np.zeros((x.shape[0], *counts, x.shape[-1]), "float64")
    for index in np.ndindex(*counts):
        window = [slice(max(i * strides - p[0], 0), i * strides - p[0] + pool)
                  for i, p in zip(index, pads, strict=True)]
        axes = tuple(range(1, 1 + len(sizes)))
        out[(slice(None), *index)] = x[(slice(None), *window)].mean(axis=axes)
    return out


CASES = [  # (input shape, pool, strides, padding)
    ((2, 8, 12, 3), 3, 2, "same"),  # landscape, even: one more cell after on both axes
    ((1, 12, 7, 2), 3, 2, "same"),  # upright, one odd axis: alike on that axis only
    ((1, 9, 9, 2), 3, 2, "same"),  # square, odd: one cell each side
    ((2, 6, 6, 4), 2, 2, "same"),  # the ResNet-D shortcut's pool (no padding)
    ((1, 7, 10, 2), 2, 2, "valid"),  # timm's lambda pool
    ((1, 4, 4, 1), 2, 1, "same"),  # stride 1, even pool: after only
    ((2, 10, 3), 3, 2, "same"),  # a sequence (LambdaConv1D)
]


@pytest.mark.parametrize("x_shape, pool, strides, padding", CASES)
def test_values_are_tensorflow_s_on_every_backend(x_shape, pool, strides, padding):
    x = np.random.default_rng(7).normal(size=x_shape).astype("float32")
    got = keras.ops.convert_to_numpy(average_pool(x, pool, strides, padding))
    np.testing.assert_allclose(got, reference(x, pool, strides, padding), rtol=1e-5, atol=1e-6)
    if len(x_shape) == 4:
        layer = AveragePooling2D(pool, strides=strides, padding=padding)
        np.testing.assert_allclose(keras.ops.convert_to_numpy(layer(x)), got, rtol=1e-6)
        assert layer.compute_output_shape(x_shape) == got.shape


def test_the_gradient_is_each_cell_s_share_of_its_windows():
    x = np.random.default_rng(8).normal(size=(1, 4, 6, 2)).astype("float32")
    weights = np.random.default_rng(9).normal(size=(1, 2, 3, 2))
    expected = np.zeros_like(x, "float64")
    for index in np.ndindex(*x.shape):  # d(sum(out * weights)) / dx, cell by cell
        bump = np.zeros_like(x, "float64")
        bump[index] = 1.0
        expected[index] = (reference(bump, 3, 2, "same") * weights).sum()
    got = _gradient(lambda t: average_pool(t, 3, 2, "same"), x, weights)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def _gradient(function, x, weights):
    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        return np.asarray(jax.grad(lambda t: (function(t) * weights).sum())(x))
    if backend == "torch":
        import torch

        t = torch.tensor(x, requires_grad=True)
        (function(t) * torch.tensor(weights, dtype=torch.float32)).sum().backward()
        return t.grad.numpy()
    import tensorflow as tf

    t = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(t)
        loss = tf.reduce_sum(function(t) * weights)
    return tape.gradient(loss, t).numpy()


def test_the_layer_saves_as_itself(tmp_path):
    inputs = keras.Input((8, 8, 2))
    model = keras.Model(inputs, AveragePooling2D(3, strides=2, padding="same")(inputs))
    model.save(tmp_path / "pool.keras")
    loaded = keras.saving.load_model(tmp_path / "pool.keras")
    assert isinstance(loaded.layers[-1], AveragePooling2D)
    assert loaded.layers[-1].get_config() == model.layers[-1].get_config()


@pytest.mark.parametrize(
    "kwargs",
    [{"pool_size": (2, 3)}, {"pool_size": 2, "strides": (1, 2)},
     {"pool_size": 2, "data_format": "channels_first"}],
)
def test_non_square_or_channels_first_pooling_is_refused(kwargs):
    with pytest.raises(ValueError, match="square windows and strides on channels-last maps"):
        AveragePooling2D(**kwargs)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_precision_keeps_its_dtype_and_tensorflow_s_values(dtype):
    x = np.random.default_rng(10).normal(size=(1, 8, 6, 3)).astype("float32")
    got = average_pool(keras.ops.cast(x, dtype), 3, 2, "same")
    assert keras.backend.standardize_dtype(got.dtype) == dtype
    expected = reference(x.astype("float64"), 3, 2, "same")
    values = keras.ops.convert_to_numpy(keras.ops.cast(got, "float32"))
    np.testing.assert_allclose(values, expected, rtol=2e-2, atol=2e-2)  # 8 bits of mantissa


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"pool_size": 0, "strides": 1}, "`pool_size` must be a positive integer"),
        ({"pool_size": 2, "strides": (1, 2)}, "`strides` must be a positive integer"),
        ({"pool_size": 2, "strides": 1, "padding": "full"}, "`padding` must be one of"),
    ],
)
def test_bad_arguments_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        average_pool(np.zeros((1, 4, 4, 1), "float32"), **kwargs)


def test_padding_in_upper_case_is_same_padding():
    x = np.random.default_rng(11).normal(size=(1, 4, 4, 2)).astype("float32")
    layer = AveragePooling2D(3, strides=2, padding="SAME")
    assert layer.padding == "same"
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(layer(x)), reference(x, 3, 2, "same"), rtol=1e-5, atol=1e-6
    )


@pytest.mark.parametrize("strides", [0, (2, 0)])
def test_the_layer_refuses_a_stride_of_zero_when_made(strides):
    """Keras' layer takes it (a window of 0 it refuses itself) and fails when called."""
    message = f"`strides` must be a positive integer; received strides={strides!r}."
    with pytest.raises(ValueError, match=re.escape(message)):
        AveragePooling2D(2, strides=strides)
