"""Evaluation preprocessing shared by the zoo, the training data pipeline and serving.

The centre crop of evaluation (the shorter side resized, bicubic and antialiased, to
``size / crop_fraction``, then the central ``size x size`` square, as timm and the ResNet
references do) and the ImageNet mean/std normalisation of ``[0, 255]`` images. The crop runs in
TensorFlow graphs (``tf.data``, serving) and imports TensorFlow when called;
[`normalize`][lambda_keras.preprocessing.normalize] runs on every backend (Mask R-CNN's input).
"""

from __future__ import annotations

import numpy as np

from lambda_keras import _validation as v

__all__ = [
    "IMAGENET_MEAN",
    "IMAGENET_STD",
    "center_crop",
    "check_crop_fraction",
    "eval_image",
    "eval_image_on_backend",
    "normalize",
]

IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], "float32") * 255.0
"""ImageNet's per-channel mean on the `[0, 255]` scale (RGB), subtracted by `normalize`."""
IMAGENET_STD = np.array([0.229, 0.224, 0.225], "float32") * 255.0
"""ImageNet's per-channel standard deviation on the `[0, 255]` scale (RGB), divided by in
`normalize`."""


def check_crop_fraction(crop_fraction) -> float:
    """Return ``crop_fraction`` as a float, or raise ``ValueError`` unless it is in (0, 1]."""
    return v.number_in("crop_fraction", crop_fraction, 0.0, 1.0, low_open=True)


def center_crop(image, size: int, crop_fraction: float):
    """Resize the shorter side to ``size / crop_fraction``, then take the central square, of
    one image ``[height, width, channels]`` or a batch ``[batch, height, width, channels]``."""
    import tensorflow as tf

    shape = tf.cast(tf.shape(image)[-3:-1], tf.float32)
    scale = size / crop_fraction / tf.reduce_min(shape)
    resized = tf.image.resize(
        image, tf.cast(tf.round(shape * scale), tf.int32), method="bicubic", antialias=True
    )
    return tf.image.resize_with_crop_or_pad(resized, size, size)


def eval_image(image, image_size: int, crop_fraction: float = 0.875):
    """Evaluation preprocessing of one image or a batch (before normalisation): centre crop,
    float32 in ``[0, 255]``. The serving graph and keras-hub's image converters in ``tf.data``
    ([`image_classifier`][lambda_keras.hub.image_classifier]) apply exactly this.

    Raises:
        ValueError: If ``image_size`` is not a positive integer or ``crop_fraction`` is not a
            number in (0, 1] (both Python values, checked before anything is traced).
    """
    import tensorflow as tf

    image_size = v.positive_int("image_size", image_size)
    crop_fraction = check_crop_fraction(crop_fraction)
    image = center_crop(tf.cast(image, tf.float32), image_size, crop_fraction)
    return tf.clip_by_value(image, 0.0, 255.0)


def eval_image_on_backend(image, image_size: int, crop_fraction: float = 0.875):
    """[`eval_image`][lambda_keras.preprocessing.eval_image] in ``keras.ops``, on Keras'
    backend without TensorFlow, for an image or a batch of known height and width (keras-hub's
    image converters outside ``tf.data``). The same resized size and crop; the resize is the
    backend's bicubic antialiased kernel, within 0.013 of TensorFlow's on the ``[0, 255]``
    scale (measured on scikit-learn's photos on JAX and PyTorch; TensorFlow's is its own).

    Args:
        image: ``[height, width, channels]`` or ``[batch, height, width, channels]``, its
            height and width known and at least 1.
        image_size: The side of the square crop, a positive integer.
        crop_fraction: The crop's share of the resized shorter side, in (0, 1].

    Returns:
        float32 ``[..., image_size, image_size, channels]`` in ``[0, 255]``.

    Raises:
        ValueError: If ``image_size`` is not a positive integer, ``crop_fraction`` is not a
            number in (0, 1], or ``image`` is not of rank 3 or 4 with a known height and
            width of at least 1 pixel.
    """
    import keras

    image_size = v.positive_int("image_size", image_size)
    crop_fraction = check_crop_fraction(crop_fraction)
    image = keras.ops.convert_to_tensor(image)
    _check_image_shape(tuple(image.shape))
    image = keras.ops.cast(image, "float32")
    height, width = image.shape[-3], image.shape[-2]
    # TensorFlow's arithmetic: float32, rounding half to even
    scale = np.float32(image_size / crop_fraction) / np.float32(min(height, width))
    sides = tuple(int(np.round(np.float32(side) * scale)) for side in (height, width))
    resized = keras.ops.image.resize(
        image, sides, interpolation="bicubic", antialias=True, data_format="channels_last"
    )
    top, left = ((side - image_size) // 2 for side in sides)
    crop = resized[..., top : top + image_size, left : left + image_size, :]
    return keras.ops.clip(crop, 0.0, 255.0)


def _check_image_shape(shape: tuple) -> None:
    """Raise ``ValueError`` unless ``shape`` is one image ``[height, width, channels]`` or a
    batch ``[batch, height, width, channels]`` whose height and width are known and >= 1."""
    if len(shape) not in (3, 4) or not all(
        isinstance(side, int) and side >= 1 for side in shape[-3:-1]
    ):
        raise ValueError(
            "`image` must be [height, width, channels] or [batch, height, width, channels] "
            f"with a known height and width of at least 1 pixel; received shape {shape}."
        )


def normalize(images):
    """ImageNet mean/std normalisation of ``[0, 255]`` images ``[..., 3]``.

    A tensor of Keras' backend (a Mask R-CNN's input) is normalised with the constants as
    tensors of that backend, on its device (``tensor - ndarray`` would be computed by NumPy,
    through host memory, which a GPU tensor refuses), in float32 at least: a floating tensor
    comes back in its dtype, an integer one as float32. TensorFlow tensors in ``tf.data`` and
    serving graphs, Keras' symbolic tensors and NumPy arrays take the constants as they are;
    anything else (nested lists) becomes a NumPy array first.

    Raises:
        TypeError: ``images`` are not numbers (strings, booleans, None).
        ValueError: their last axis is known and not 3 (RGB; one grey channel is not taken
            for three), or they have no axis.
    """
    import keras

    images = _checked_images(images)
    if keras.ops.is_tensor(images):
        dtype = keras.ops.dtype(images)
        compute = keras.backend.result_type(dtype, "float32")
        mean = keras.ops.convert_to_tensor(IMAGENET_MEAN, compute)
        std = keras.ops.convert_to_tensor(IMAGENET_STD, compute)
        normalized = (keras.ops.cast(images, compute) - mean) / std
        return keras.ops.cast(normalized, dtype) if "float" in dtype else normalized
    return (images - IMAGENET_MEAN) / IMAGENET_STD


def _checked_images(images):
    """``images`` as they are where they have a shape and a dtype (arrays, tensors, symbolic
    tensors: nothing is read or converted), else as a NumPy array; ``normalize``'s errors."""
    if not (hasattr(images, "shape") and hasattr(images, "dtype")):
        images = np.asarray(images)
    dtype = _dtype_name(images.dtype)
    if not dtype.startswith(("float", "int", "uint", "bfloat")):
        raise TypeError(
            "`images` must be numbers (pixel values in [0, 255]); received images of dtype "
            f"{dtype}."
        )
    if getattr(images.shape, "rank", 0) is None:  # a tf.data tensor of unknown rank
        return images
    shape = tuple(images.shape)
    if not shape or shape[-1] not in (3, None):
        raise ValueError(
            "`images` must have their 3 channels (RGB) last, [..., 3]; received images of "
            f"shape {shape}."
        )
    return images


def _dtype_name(dtype) -> str:
    """Keras' name of ``dtype`` (``"float32"``), or NumPy's or its ``str`` where Keras has none
    (``"<U1"`` for strings, ``"object"``)."""
    import keras

    try:
        return keras.backend.standardize_dtype(dtype)
    except (ValueError, TypeError, AttributeError):
        return str(getattr(dtype, "name", dtype))
