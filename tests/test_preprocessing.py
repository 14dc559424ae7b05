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


@pytest.mark.parametrize("shape", ["landscape", "upright", "small", "tie"])
def test_the_evaluation_crop_on_the_backend_is_tensorflow_s(shape):
    """``eval_image_on_backend`` (keras.ops, no TensorFlow) crops what ``eval_image`` crops:
    the same resized sides, offsets and clipping; the backend's bicubic kernel within 0.02 of
    TensorFlow's on the [0, 255] scale on a real photo (exactly TensorFlow's on TensorFlow)."""
    from sklearn.datasets import load_sample_images

    from lambda_keras.preprocessing import eval_image, eval_image_on_backend

    china, flower = load_sample_images().images
    image = {
        "landscape": china,
        "upright": flower.transpose(1, 0, 2),
        "small": china[:97, :97],
        "tie": china[:128, :129],  # 129 / 2 = 64.5: half to even (TensorFlow's), 64
    }
    image = np.ascontiguousarray(image[shape])
    fraction = 1.0 if shape == "tie" else 0.875
    got = keras.ops.convert_to_numpy(eval_image_on_backend(image, 64, fraction))
    assert got.shape == (64, 64, 3) and got.dtype == np.float32
    assert got.min() >= 0.0 and got.max() <= 255.0
    batch = keras.ops.convert_to_numpy(eval_image_on_backend(np.stack([image] * 2), 64, fraction))
    np.testing.assert_allclose(batch, [got, got], atol=1e-4)
    try:
        expected = np.asarray(eval_image(image, 64, fraction))
    except ImportError:  # the TensorFlow-free children of tests/test_backends.py
        return
    tolerance = 1e-4 if keras.backend.backend() == "tensorflow" else 0.013
    np.testing.assert_allclose(got, expected, atol=tolerance)
