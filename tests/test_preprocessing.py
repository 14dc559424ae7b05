"""ImageNet normalisation (lambda_keras/preprocessing.py ``normalize``): NumPy arrays, and tensors
of Keras' backend with the constants on their device, in float32 at least (integer images do
not wrap, half-precision ones come back in their dtype). Runs on every backend (the JAX and
PyTorch children of tests/test_backends.py too)."""

import keras
import numpy as np
import pytest

from lambda_keras.preprocessing import IMAGENET_MEAN, IMAGENET_STD, normalize

PIXELS = np.array([[[0, 128, 255], [255, 0, 3]], [[12, 250, 99], [200, 201, 202]]], "uint8")
EXPECTED = (PIXELS.astype("float64") - IMAGENET_MEAN) / IMAGENET_STD  # [2, 2, 3]: not square


def test_numpy_images_are_normalised_with_numpy():
    out = normalize(PIXELS.astype("float32"))
    assert isinstance(out, np.ndarray)
    np.testing.assert_allclose(out, EXPECTED, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(
    "dtype, expected_dtype, tolerance",
    [("float32", "float32", 1e-6), ("uint8", "float32", 1e-6), ("bfloat16", "bfloat16", 2e-2)],
)
def test_backend_tensors_stay_tensors_in_float32_at_least(dtype, expected_dtype, tolerance):
    images = keras.ops.cast(keras.ops.convert_to_tensor(PIXELS), dtype)
    out = normalize(images)
    assert keras.ops.is_tensor(out) and keras.ops.dtype(out) == expected_dtype
    values = keras.ops.convert_to_numpy(keras.ops.cast(out, "float32"))
    np.testing.assert_allclose(values, EXPECTED, rtol=tolerance, atol=tolerance)
