"""TiledConv2DTranspose: Keras' Conv2DTranspose values and gradients (the matrix-product path on
JAX), its refusals, and its config."""

import keras
import numpy as np
import pytest

from lambda_keras.detection.transposed_conv import TiledConv2DTranspose
from tests.backend import numpy


def _pair(kernel_size=2, activation="relu", use_bias=True):
    tiled = TiledConv2DTranspose(6, kernel_size, activation=activation, use_bias=use_bias)
    keras_layer = keras.layers.Conv2DTranspose(
        6, kernel_size, strides=kernel_size, activation=activation, use_bias=use_bias
    )
    return tiled, keras_layer


@pytest.mark.parametrize(
    "shape, kernel_size, activation, use_bias",
    [
        ((3, 5, 7, 4), 2, "relu", True),  # landscape, odd sizes
        ((2, 7, 3, 4), 2, None, False),  # upright
        ((1, 4, 4, 3), (3, 2), None, True),  # a non-square tile
    ],
)
def test_values_and_gradients_are_keras_conv2d_transpose_s(
    shape, kernel_size, activation, use_bias
):
    rng = np.random.default_rng(0)
    x = rng.normal(size=shape).astype("float32")
    tiled, keras_layer = _pair(kernel_size, activation, use_bias)
    tiled.build(shape)
    keras_layer.build(shape)
    weights = [rng.normal(size=w.shape).astype("float32") for w in keras_layer.get_weights()]
    tiled.set_weights(weights)
    keras_layer.set_weights(weights)
    np.testing.assert_allclose(numpy(tiled(x)), numpy(keras_layer(x)), rtol=1e-5, atol=1e-5)
    assert [tuple(w.shape) for w in tiled.weights] == [tuple(w.shape) for w in keras_layer.weights]
    if keras.backend.backend() == "jax":
        import jax

        def loss(layer):
            def f(kernel, inputs):
                outputs = layer.call.__func__(_with_kernel(layer, kernel), inputs)
                return (outputs * np.linspace(-1, 1, outputs.size).reshape(outputs.shape)).sum()

            return jax.grad(f, argnums=(0, 1))(layer.kernel.value, x)

        for got, expected in zip(loss(tiled), loss(keras_layer), strict=True):
            np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


class _with_kernel:  # noqa: N801  (the layer's attributes with another kernel, for jax.grad)
    def __init__(self, layer, kernel):
        self._layer, self.kernel = layer, kernel

    def __getattr__(self, name):
        return getattr(self._layer, name)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"strides": 1}, "strides equal to kernel_size"),
        ({"padding": "same"}, "padding='valid'"),
        ({"output_padding": 1, "strides": 2}, "no output_padding"),
    ],
)
def test_a_layer_whose_kernel_would_overlap_is_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        TiledConv2DTranspose(4, 2, **kwargs)


def test_the_config_round_trips():
    layer = TiledConv2DTranspose(8, 2, activation="relu", name="upsample")
    clone = TiledConv2DTranspose.from_config(layer.get_config())
    assert clone.strides == (2, 2) and clone.filters == 8 and clone.name == "upsample"
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(layer))
    assert isinstance(restored, TiledConv2DTranspose)
