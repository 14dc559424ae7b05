"""LambdaConv2D / LambdaConv1D: the lambda layer with a convolution's signature."""

import keras
import numpy as np
import pytest

from lambda_keras.layers import AveragePooling2D, LambdaConv1D, LambdaConv2D, LambdaLayer
from tests.backend import numpy

RNG = np.random.default_rng(0)


def randomize(layer):
    rng = np.random.default_rng(1)
    layer.set_weights(
        [w + rng.normal(0, 0.1, w.shape).astype(w.dtype) for w in layer.get_weights()]
    )


@pytest.mark.parametrize("implementation", ["conv3d", "depthwise", "einsum", "auto"])
def test_equals_lambda_layer_on_shared_weights(implementation):
    x = RNG.normal(size=(2, 10, 12, 16)).astype("float32")
    conv = LambdaConv2D(32, 7, key_dim=8, num_heads=4, implementation=implementation)
    conv.build(x.shape)
    randomize(conv)
    layer = LambdaLayer(32, key_dim=8, num_heads=4, scope_size=7, implementation="einsum")
    layer.build(x.shape)
    layer.set_weights(conv.get_weights())
    assert [w.shape for w in conv.weights] == [w.shape for w in layer.weights]
    np.testing.assert_allclose(
        numpy(conv(x, training=False)), numpy(layer(x, training=False)), atol=2e-5
    )


def test_stride_two_is_the_papers_average_pool_and_replaces_a_strided_conv():
    x = RNG.normal(size=(2, 15, 14, 16)).astype("float32")
    conv = LambdaConv2D(32, 5, strides=2, key_dim=8)
    layer = LambdaLayer(32, key_dim=8, scope_size=5)
    y = numpy(conv(x, training=False))
    layer.build(x.shape)
    layer.set_weights(conv.get_weights())
    # The paper's pooling, TensorFlow's values (the 14-wide axis pads one side more: Keras 3.15.1
    # on PyTorch repeats the edge there, tests/layers/test_average_pooling.py).
    pooled = AveragePooling2D(3, strides=2, padding="same")(layer(x, training=False))
    np.testing.assert_allclose(y, numpy(pooled), atol=2e-5)
    reference = keras.layers.Conv2D(32, 3, strides=2, padding="same")(x)
    assert y.shape == reference.shape == (2, 8, 7, 32)
    assert conv.compute_output_shape((None, 15, 14, 16)) == (None, 8, 7, 32)


def test_sequences():
    x = RNG.normal(size=(2, 11, 8)).astype("float32")
    conv = LambdaConv1D(12, 5, strides=2, key_dim=4, num_heads=3, implementation="conv3d")
    assert conv(x).shape == (2, 6, 12)
    layer = LambdaLayer(12, key_dim=4, num_heads=3, scope_size=5)
    layer.build(x.shape)
    layer.set_weights(conv.get_weights())
    pooled = keras.layers.AveragePooling1D(3, strides=2, padding="same")(layer(x, training=False))
    np.testing.assert_allclose(numpy(conv(x, training=False)), numpy(pooled), atol=2e-5)


def test_keras_file_round_trip_and_config(tmp_path):
    inputs = keras.Input((9, 9, 8))
    conv = LambdaConv2D(16, (5, 3), strides=2, key_dim=4, implementation="depthwise", name="lc")
    model = keras.Model(inputs, conv(inputs))
    randomize(conv)
    path = tmp_path / "m.keras"
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    x = RNG.normal(size=(2, 9, 9, 8)).astype("float32")
    np.testing.assert_array_equal(numpy(loaded(x)), numpy(model(x)))
    config = loaded.get_layer("lc").get_config()
    assert config["kernel_size"] == [5, 3] and config["implementation"] == "depthwise"
    assert config["strides"] == 2 and "scope_size" not in config


def test_mixed_precision():
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_bfloat16")
    try:
        conv = LambdaConv2D(16, 5, strides=2, key_dim=4)
        y = conv(RNG.normal(size=(1, 8, 8, 8)).astype("float32"))
        assert keras.backend.standardize_dtype(y.dtype) == "bfloat16"
        assert all(w.dtype == "float32" for w in conv.weights)
        assert np.isfinite(numpy(keras.ops.cast(y, "float32"))).all()
    finally:
        keras.config.set_dtype_policy(previous)


@pytest.mark.parametrize(
    "kwargs,error,message",
    [
        (dict(padding="valid"), ValueError, "`padding` must be 'same'.*'valid'"),
        (dict(strides=3), ValueError, "`strides` must be 1 or 2.*3"),
        (dict(kernel_size=4), ValueError, "kernel_size"),
        (dict(implementation="fft"), ValueError, "`implementation` must be one of.*'fft'"),
        (dict(filters=0), ValueError, "`filters` must be a positive integer"),
        (dict(filters=30), ValueError, "num_heads"),
    ],
)
def test_bad_arguments(kwargs, error, message):
    kwargs = {"filters": 32, **kwargs}
    with pytest.raises(error, match=message):
        LambdaConv2D(**kwargs)


@pytest.mark.parametrize("strides", [2, np.int64(2), (2, 2), [2, 2], (2,)])
def test_int_strides_in_any_form(strides):
    conv = LambdaConv2D(8, 3, strides=strides, key_dim=4, num_heads=2)
    assert conv.strides == 2 and type(conv.get_config()["strides"]) is int
    assert LambdaConv1D(8, 3, strides=(1,), key_dim=4, num_heads=2).strides == 1


def test_wrong_input_rank_names_the_layout():
    with pytest.raises(ValueError, match=r"LambdaConv2D takes inputs \[batch, height, width"):
        LambdaConv2D(8)(np.zeros((2, 5, 8), "float32"))
