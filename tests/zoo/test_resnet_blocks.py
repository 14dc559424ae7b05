"""The ResNet building blocks' own behaviour (the models are tested through the harness)."""

import keras
import numpy as np
import pytest

from lambda_keras.zoo.resnet_blocks import PaddedMaxPooling2D


def reference_max_pool(x, size, stride, pad):
    """PyTorch's MaxPool2d(size, stride, pad) by loops: windows start at -pad, step stride."""
    batch, height, width, channels = x.shape
    out_h = (height + 2 * pad - size) // stride + 1
    out_w = (width + 2 * pad - size) // stride + 1
    out = np.full((batch, out_h, out_w, channels), -np.inf)
    for i in range(out_h):
        for j in range(out_w):
            for di in range(size):
                for dj in range(size):
                    r, c = i * stride - pad + di, j * stride - pad + dj
                    if 0 <= r < height and 0 <= c < width:
                        out[:, i, j] = np.maximum(out[:, i, j], x[:, r, c])
    return out


@pytest.mark.parametrize("shape", [(2, 8, 8, 3), (1, 7, 10, 2), (1, 2, 2, 1)])
def test_padded_max_pool_is_pytorch_max_pool(shape):
    # Negative inputs (as after SiLU): zero padding would win the max at the borders.
    x = np.random.default_rng(0).uniform(-0.3, -0.01, size=shape).astype("float32")
    layer = PaddedMaxPooling2D(3, strides=2, padding=1)
    y = np.asarray(layer(x))
    np.testing.assert_array_equal(y, reference_max_pool(x, 3, 2, 1).astype("float32"))
    assert tuple(layer.compute_output_shape((None, *shape[1:]))) == (None, *y.shape[1:])
    # Keras' own "same" max pool centres its windows differently on even maps.
    if shape[1] % 2 == 0 and shape[1] > 2:
        keras_same = np.asarray(keras.layers.MaxPooling2D(3, 2, padding="same")(x))
        assert not np.array_equal(keras_same, y)


def test_padded_max_pool_config_and_errors():
    layer = PaddedMaxPooling2D(5, strides=3, padding=2, name="pool")
    clone = PaddedMaxPooling2D.from_config(layer.get_config())
    assert (clone.pool_size, clone.strides, clone.padding) == (5, 3, 2)
    with pytest.raises(ValueError, match="`padding` must be a non-negative integer.*-1"):
        PaddedMaxPooling2D(padding=-1)
    with pytest.raises(ValueError, match="`pool_size` must be a positive integer"):
        PaddedMaxPooling2D(pool_size=0)
