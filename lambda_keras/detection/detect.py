"""Detections on one photo, on every Keras backend: what a SavedModel's ``serving_default`` returns
([`lambda_keras.detection.serving`][lambda_keras.detection.serving]), from the Keras model
itself."""

from __future__ import annotations

import dataclasses
import weakref

import keras
import numpy as np
from keras import ops as K

from lambda_keras.backend import devices, glibc_heap
from lambda_keras.detection.ops._checks import Tensor
from lambda_keras.detection.transform import InputTransform

__all__ = ["PreparedPhoto", "detect", "photo_detections", "prepare_photo"]


def detect(model: keras.Model, image, image_size: int | None = None) -> dict[str, np.ndarray]:
    """The detections of ``model`` on one photo, in the photo's pixels.

    The photo goes through the model's input transform (``model.input_transform(image_size)``:
    torchvision's for [`maskrcnn_resnet50_fpn`][lambda_keras.detection.maskrcnn_resnet50_fpn], the
    letterbox at ``image_size`` otherwise), the model predicts on it (compiled as ``predict``
    compiles on the backend) and the boxes and masks go back into the photo. Where ``predict``
    compiles (JAX, TensorFlow, and PyTorch where the model's steps compile: by default on a
    GPU) the photo is padded to the smallest of the transform's few canvases that holds it
    ([`compiled_canvas`][lambda_keras.detection.transform.TorchvisionTransform.compiled_canvas]: one
    compiled program per canvas, a few for photos of every size); on eager PyTorch only to the
    next multiple of 64 (the same detections: the model zeroes its maps beyond the photo).

    On a CPU on JAX and PyTorch the first call has glibc keep the memory the calls free in its
    heap for the next photo, for the whole process
    ([`keep_buffers_in_heap`][lambda_keras.backend.glibc_heap.keep_buffers_in_heap];
    ``LAMBDA_KERAS_GLIBC_HEAP=0`` leaves glibc alone): by default glibc maps each feature map
    anew at every photo and returns it after, and the next photo faults its pages in again.

    Args:
        model: A [`MaskRCNN`][lambda_keras.detection.MaskRCNN].
        image: ``uint8 [height, width, 3]`` RGB photo (a NumPy array or anything
            ``np.asarray`` reads).
        image_size: The side a model without its own transform detects at (a multiple of 64);
            None for a model with one.

    Returns:
        NumPy arrays, padded to the model's ``max_detections`` ``D``, best first:
        ``boxes [D, 4]`` (``y1, x1, y2, x2`` in the photo's pixels), ``scores [D]``,
        ``classes [D]`` (0-based labels, -1 for padding), ``masks [D, height, width]`` uint8
        0/1 and ``num_detections`` (the valid ones lead).

    Raises:
        TypeError: ``model`` is not a detector.
        ValueError: ``image`` is not ``[height, width, 3]``; or ``LAMBDA_KERAS_GLIBC_HEAP``
            holds something other than an on or off value.

    Examples:
        >>> import numpy as np
        >>> from lambda_keras import zoo
        >>> from lambda_keras.detection import MaskRCNN, detect
        >>> backbone = zoo.LambdaResNetBackbone(50, width_multiplier=0.25)
        >>> detector = MaskRCNN(backbone, num_classes=3, max_detections=10)
        >>> # any size: letterboxed to 128 x 128
        >>> photo = np.zeros((100, 160, 3), "uint8")
        >>> found = detect(detector, photo, image_size=128)
        >>> found["boxes"].shape, found["masks"].shape  # in the photo's pixels
        ((10, 4), (10, 100, 160))
    """
    if not isinstance(model, keras.Model) or not hasattr(model, "input_transform"):
        raise TypeError(f"`model` must be a MaskRCNN; received {type(model).__name__}.")
    photo = prepare_photo(model, image, image_size)
    _keep_buffers_on_cpu()
    return photo_detections(photo, _predict(model, photo.inputs))


def _keep_buffers_on_cpu() -> None:
    """glibc's heap keeps the memory freed between photos on a CPU where the backend's
    allocator does not keep it itself (JAX, PyTorch; TensorFlow's does)."""
    if keras.backend.backend() in ("jax", "torch") and not devices.has_accelerator():
        glibc_heap.keep_buffers_in_heap()


@dataclasses.dataclass(frozen=True)
class PreparedPhoto:
    """One photo ready for the model: ``inputs`` (the model's input, the photo resized and
    padded to its canvas), the ``transform`` that made it, the resized ``size`` and the photo's
    ``shape`` (``(height, width)``)."""

    inputs: Tensor | dict[str, Tensor]
    transform: InputTransform
    size: tuple[int, int]
    shape: tuple[int, int]


def prepare_photo(model: keras.Model, image, image_size: int | None = None) -> PreparedPhoto:
    """The first part of [`detect`][lambda_keras.detection.detect]: the checked photo through
    the model's input transform, resized and padded (eagerly, ``keras.ops``)."""
    image = _photo(image)
    transform = model.input_transform(image_size)
    shape = image.shape[:2]
    size = transform.resized_size(*shape)
    canvas = transform.canvas(size, smallest=_runs_each_shape(model))
    resized = K.image.resize(
        K.convert_to_tensor(image[None], "float32"), size, interpolation="bilinear"
    )[0]
    padded = K.pad(resized, [[0, canvas[0] - size[0]], [0, canvas[1] - size[1]], [0, 0]])
    return PreparedPhoto(transform.model_inputs(padded, size), transform, size, shape)


def photo_detections(photo: PreparedPhoto, out: dict) -> dict[str, np.ndarray]:
    """The last part of [`detect`][lambda_keras.detection.detect]: the model's outputs ``out``
    on ``photo`` (a batch of one) in the photo's pixels, masks pasted, as NumPy arrays."""
    transform = photo.transform
    boxes = transform.boxes_to_photo(K.convert_to_tensor(out["boxes"][0]), photo.size, photo.shape)
    served = box_outputs(out, boxes)  # reads the model's valid, scores, classes only
    served = {key: np.asarray(K.convert_to_numpy(value)) for key, value in served.items()}
    valid = np.asarray(K.convert_to_numpy(out["valid"][0]), bool)
    masks = transform.masks_on_host(out["masks"][0], served["boxes"], photo.shape, keep=valid)
    served["masks"] = masks.view(np.uint8)  # the padding's rows empty
    return {key: served[key] for key in ("boxes", "scores", "classes", "masks", "num_detections")}


# TensorFlow: one compiled call per model and canvas (a few canvases: no retracing warning).
# Keras' own predict function relaxes a second shape to [None, None], which a MaskRCNN cannot
# trace (its anchors).
_TENSORFLOW_CALLS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _predict(model: keras.Model, inputs) -> dict[str, np.ndarray]:
    """The model's outputs on ``inputs``, compiled as the backend compiles ``predict``."""
    if keras.backend.backend() != "tensorflow":
        # jax.jit traces each shape; PyTorch compiles each (CompiledSteps) or runs eagerly
        return model.predict_on_batch(inputs)
    import tensorflow as tf

    calls = _TENSORFLOW_CALLS.setdefault(model, {})
    images = inputs["images"] if isinstance(inputs, dict) else inputs
    canvas = tuple(images.shape)
    if canvas not in calls:  # the function holds the model weakly: the entry may go with it
        held = weakref.ref(model)
        calls[canvas] = tf.function(lambda x: held()(x, training=False))
    return {key: value.numpy() for key, value in calls[canvas](inputs).items()}


def _runs_each_shape(model: keras.Model) -> bool:
    """Whether the model predicts eagerly, each shape as it comes (eager PyTorch): then the
    photo takes the smallest canvas. A compiled predict (JAX, TensorFlow, a compiled step on
    PyTorch) compiles a program per shape: the smallest of the transform's few canvases that
    holds the photo, which photos of every size share."""
    if keras.backend.backend() != "torch":
        return False
    compiled_mode = getattr(model, "compiled_step_mode", None)
    return compiled_mode is None or compiled_mode("predict") is None


def _photo(image) -> np.ndarray:
    array = np.asarray(K.convert_to_numpy(image))  # a tensor: from its device
    if array.dtype != np.uint8:
        raise TypeError(f"`image` must be uint8 RGB [height, width, 3]; received {array.dtype}.")
    if array.ndim != 3 or array.shape[-1] != 3 or 0 in array.shape:
        raise ValueError(
            f"`image` must be one RGB photo [height, width, 3]; received shape {array.shape}."
        )
    return array


def outputs(out: dict, boxes, masks) -> dict:
    """The serving outputs from the model's ``out`` (a batch of one) with ``boxes`` and bool
    ``masks`` already in the photo's pixels; padding zeroed (``keras.ops``, inside the
    SavedModel's graph in [`lambda_keras.detection.serving`][lambda_keras.detection.serving])."""
    valid = K.convert_to_tensor(out["valid"][0])
    masks = K.cast(K.logical_and(masks, valid[:, None, None]), "uint8")
    return {**box_outputs(out, boxes), "masks": masks}


def box_outputs(out: dict, boxes) -> dict:
    """``outputs`` but the masks (eager in [`detect`][lambda_keras.detection.detect], which
    pastes the masks on the host)."""
    valid = K.convert_to_tensor(out["valid"][0])
    return {
        "boxes": K.where(valid[:, None], boxes, 0.0),
        "scores": K.convert_to_tensor(out["scores"][0]),
        "classes": K.convert_to_tensor(out["classes"][0]),
        "num_detections": K.sum(K.cast(valid, "int32")),
    }
