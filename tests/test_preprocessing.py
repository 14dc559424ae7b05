"""ImageNet normalisation (lambda_keras/preprocessing.py ``normalize``): NumPy arrays, and tensors
of Keras' backend with the constants on their device, in float32 at least (integer images do
not wrap, half-precision ones come back in their dtype). Runs on every backend (the JAX and
PyTorch children of tests/test_backends.py too)."""

import re

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


def test_nested_lists_are_normalised_as_arrays():
    out = normalize(PIXELS.tolist())
    assert isinstance(out, np.ndarray)
    np.testing.assert_allclose(out, EXPECTED, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(
    "images, error, message",
    [
        ("x", TypeError, "`images` must be numbers .*received images of dtype str"),
        (None, TypeError, "`images` must be numbers .*received images of dtype object"),
        (np.array([["a", "b", "c"]]), TypeError, "`images` must be numbers .*dtype str"),
        (np.ones((2, 2, 3), bool), TypeError, "`images` must be numbers .*dtype bool"),
        (np.zeros((2, 2, 4)), ValueError, r"3 channels \(RGB\) last.*shape \(2, 2, 4\)\."),
        (np.zeros((2, 2, 1)), ValueError, r"3 channels \(RGB\) last.*shape \(2, 2, 1\)\."),
        (np.zeros(()), ValueError, r"3 channels \(RGB\) last.*shape \(\)\."),
        (np.zeros((3, 2, 2)), ValueError, r"3 channels \(RGB\) last.*shape \(3, 2, 2\)\."),
    ],
)
def test_what_is_not_rgb_numbers_is_refused_by_name(images, error, message):
    with pytest.raises(error, match=message):
        normalize(images)


def test_a_backend_tensor_without_3_channels_is_refused_before_any_op():
    with pytest.raises(ValueError, match=r"3 channels.*shape \(1, 2, 2, 4\)"):
        normalize(keras.ops.zeros((1, 2, 2, 4)))


def test_a_tf_data_tensor_of_unknown_rank_is_normalised_as_before():
    """``tf.numpy_function`` in a ``tf.data`` map gives a tensor of unknown rank: nothing to
    check, the constants broadcast as they did."""
    tf = pytest.importorskip("tensorflow")
    data = tf.data.Dataset.from_tensors(PIXELS.astype("float32"))
    data = data.map(lambda x: tf.numpy_function(lambda a: a, [x], tf.float32))
    assert data.element_spec.shape.rank is None
    (out,) = list(data.map(normalize).as_numpy_iterator())
    np.testing.assert_allclose(out, EXPECTED, rtol=1e-6, atol=1e-6)


def test_a_symbolic_tensor_of_unknown_sizes_is_normalised_symbolically():
    out = normalize(keras.KerasTensor((None, None, None, 3), "float32"))
    assert tuple(out.shape) == (None, None, None, 3)


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


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"image_size": 0}, "`image_size` must be a positive integer; received image_size=0."),
        (
            {"image_size": 224.5},
            "`image_size` must be a positive integer; received image_size=224.5.",
        ),
        (
            {"image_size": 224.0},
            "`image_size` must be a positive integer; received image_size=224.0.",
        ),
        (
            {"crop_fraction": 2.0},
            "`crop_fraction` must be a number in (0.0, 1.0]; received crop_fraction=2.0.",
        ),
        (
            {"crop_fraction": 0.0},
            "`crop_fraction` must be a number in (0.0, 1.0]; received crop_fraction=0.0.",
        ),
        (
            {"crop_fraction": float("nan")},
            "`crop_fraction` must be a number in (0.0, 1.0]; received crop_fraction=nan.",
        ),
        ({"image": np.zeros((32, 32))}, "`image` must be [height, width, channels] or"),
        ({"image": np.zeros((32, 32))}, "received shape (32, 32)."),
        ({"image": np.zeros((1, 1, 32, 32, 3))}, "received shape (1, 1, 32, 32, 3)."),
        ({"image": np.zeros((0, 32, 3))}, "at least 1 pixel; received shape (0, 32, 3)."),
        ({"image": np.zeros((2, 32, 0, 3))}, "received shape (2, 32, 0, 3)."),
    ],
)
def test_the_evaluation_crop_on_the_backend_refuses_bad_arguments_by_name(kwargs, message):
    """Checked before anything is resized: a crop fraction above 1, a float or zero size, an
    image without a channel axis or without pixels."""
    from lambda_keras.preprocessing import eval_image_on_backend

    arguments = {"image": np.zeros((32, 32, 3), "float32"), "image_size": 16, **kwargs}
    with pytest.raises(ValueError, match=re.escape(message)):
        eval_image_on_backend(**arguments)


def test_the_evaluation_crop_on_the_backend_takes_numpy_integer_sizes():
    from lambda_keras.preprocessing import eval_image_on_backend

    image = np.full((40, 30, 3), 17, "uint8")
    got = keras.ops.convert_to_numpy(eval_image_on_backend(image, np.int64(16), 1))
    assert got.shape == (16, 16, 3)
    np.testing.assert_allclose(got, 17, atol=1e-3)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"image_size": 0}, "`image_size` must be a positive integer; received image_size=0."),
        ({"image_size": 224.5}, "received image_size=224.5."),
        ({"crop_fraction": 0}, "`crop_fraction` must be a number in (0.0, 1.0]; received"),
        ({"crop_fraction": 1.5}, "received crop_fraction=1.5."),
    ],
)
def test_the_evaluation_crop_in_tensorflow_refuses_bad_arguments_by_name(kwargs, message):
    """``eval_image`` (TensorFlow, in tf.data) as its backend twin: a zero size failed inside
    TensorFlow's resize, a zero fraction divided by zero."""
    pytest.importorskip("tensorflow")
    from lambda_keras.preprocessing import eval_image

    arguments = {"image": np.zeros((32, 32, 3), "float32"), "image_size": 16, **kwargs}
    with pytest.raises(ValueError, match=re.escape(message)):
        eval_image(**arguments)
