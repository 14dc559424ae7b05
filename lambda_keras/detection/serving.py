"""SavedModel export of a Mask R-CNN for serving: one ``uint8`` image of any size in, its
detections in that image's pixels out.

Signature ``serving_default(image: uint8 [height, width, 3])`` returns ``boxes [D, 4]``
(``y1, x1, y2, x2`` in the image's pixels), ``scores [D]``, ``classes [D]`` (0-based labels,
-1 for padding), ``masks [D, height, width]`` (uint8 0/1, pasted into the image) and
``num_detections`` (the valid ones come first).

The model says how a photo becomes its input and how its outputs go back
(``model.input_transform(image_size)``,
[`lambda_keras.detection.transform`][lambda_keras.detection.transform]): with ``image_size`` the
project's letterbox (the longer side to ``image_size``, padded, as in evaluation); without it the
model's own transform, e.g. torchvision's for
[`maskrcnn_resnet50_fpn`][lambda_keras.detection.maskrcnn_resnet50_fpn] (shorter side 800, longer at
most 1333, an 832 x 1344 batch or 1344 x 832 when the photo stands upright, masks pasted by
torchvision's rule). A model with ``categories`` (COCO's) also gets ``labels.json``
(``category_ids`` and
``class_names`` per class, the training script's format) in the SavedModel directory.

The serving graph is TensorFlow's: with Keras on JAX or PyTorch,
[`export_detector`][lambda_keras.detection.serving.export_detector] saves the model to a ``.keras``
file that a TensorFlow-backend process exports
([`export_detector_keras_file`][lambda_keras.detection.serving.export_detector_keras_file]).
"""

from __future__ import annotations

import os
import tempfile

from lambda_keras.backend.requirements import require_tensorflow

# The detector runs on every backend without TensorFlow; this module writes its SavedModels.
require_tensorflow("lambda_keras.detection.serving", "writes TensorFlow SavedModels")

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

from lambda_keras.backend.tensorflow_child import run_on_tensorflow  # noqa: E402
from lambda_keras.detection import transform_graph  # noqa: E402
from lambda_keras.detection.detect import outputs  # noqa: E402
from lambda_keras.detection.image_size import check_image_size  # noqa: E402
from lambda_keras.detection.mask_rcnn import check_categories  # noqa: E402
from lambda_keras.labels_file import write_labels  # noqa: E402

__all__ = [
    "export_detector",
    "export_detector_keras_file",
    "export_detector_litert",
    "export_detector_onnx",
]


def export_detector(model: keras.Model, path: str, image_size: int | None = None) -> str:
    """Write ``model`` with its serving signature to ``path``; returns ``path``.

    Args:
        model: A [`MaskRCNN`][lambda_keras.detection.MaskRCNN] (called or fitted once).
        path: The SavedModel directory to write.
        image_size: The side the model detects at (a multiple of 64): each image is resized so
            that its longer side is ``image_size``, then padded to a square. None for a model
            that carries its own transform (torchvision's).

    Raises:
        TypeError: ``model`` is not a `MaskRCNN` or ``path`` is not a path.
        ValueError: ``image_size`` is not a positive multiple of 64, ``model`` was never
            built (called, fitted or ``model.build((None, None, None, 3))``), or
            ``model.categories`` (set after the model was made) is not one
            ``{"id": int >= 0, "name": str}`` per class.
    """
    _check_export(model, path, image_size)
    if keras.backend.backend() != "tensorflow":
        with tempfile.TemporaryDirectory() as folder:
            keras_path = os.path.join(folder, "model.keras")
            model.save(keras_path)
            return export_detector_keras_file(keras_path, path, image_size)
    _write_saved_model(model, _detect_function(model, image_size, float64=True), path)
    categories = getattr(model, "categories", None)
    if categories:  # a converted COCO model: its classes' COCO ids and names beside it
        names, ids = [c["name"] for c in categories], [c["id"] for c in categories]
        write_labels(path, names, ids)
    return path


def export_detector_keras_file(keras_path: str, path: str, image_size: int | None = None) -> str:
    """[`export_detector`][lambda_keras.detection.serving.export_detector] of the detector in the
    ``.keras`` file ``keras_path``, from any
    Keras backend: in this process on TensorFlow, else in a child process running Keras on
    TensorFlow. Returns ``path``.

    Raises:
        ValueError: ``image_size`` is not a positive multiple of 64 (before the child starts).
        RuntimeError: the child process failed; its error output is in the message.
    """
    if image_size is not None:
        check_image_size(image_size)
    if keras.backend.backend() == "tensorflow":
        return export_detector(keras.saving.load_model(keras_path), path, image_size)
    args = [keras_path, path, image_size or 0]
    run_on_tensorflow(__name__, args, f"Exporting {keras_path}")
    return path


def _write_saved_model(model, detect, path) -> None:
    archive = keras.export.ExportArchive()
    archive.track(model)
    spec = tf.TensorSpec([None, None, 3], tf.uint8, name="image")
    archive.add_endpoint("serving_default", detect, input_signature=[spec])
    archive.write_out(path, verbose=False)


def export_detector_litert(model: keras.Model, path: str, image_size: int | None = None) -> str:
    """Write ``model``'s serving function (as
    [`export_detector`][lambda_keras.detection.serving.export_detector]'s) as a LiteRT flatbuffer
    ``path`` (``.tflite``) of TensorFlow Lite's built-in ops only; returns ``path``.

    A torchvision model's resized sides are computed in integers here (LiteRT has no float64
    kernels; see ``torchvision_resize``).

    Raises:
        TypeError: ``model`` is not a `MaskRCNN` or ``path`` is not a path.
        ValueError: ``path`` does not end in ``.tflite``, or as in
            [`export_detector`][lambda_keras.detection.serving.export_detector] (a bad
            ``image_size``, an unbuilt model).
    """
    _check_export(model, path, image_size, "file")
    if not str(path).endswith(".tflite"):
        raise ValueError(f"`path` must end in .tflite; received {path!r}.")
    detect = _detect_function(model, image_size, float64=False)
    with tempfile.TemporaryDirectory() as saved:
        _write_saved_model(model, detect, saved)
        converter = tf.lite.TFLiteConverter.from_saved_model(saved, ["serving_default"])
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
        flatbuffer = converter.convert()
    with open(path, "wb") as f:
        f.write(flatbuffer)
    return path


def export_detector_onnx(
    model: keras.Model,
    path: str,
    image_size: int | None = None,
    canvas: tuple[int, int] | None = None,
) -> str:
    """Write the model itself on one fixed canvas as an ONNX file ``path``; returns ``path``.

    Keras' own ONNX export (``model.export(format="onnx")``, tf2onnx) of the model's call: the
    input is the transformed photo (``images [1, H, W, 3]`` float32, and ``image_sizes [1, 2]``
    int32 for a model whose transform pads each image: torchvision's), the outputs are the
    model's (``boxes``, ``scores``, ``classes``, ``valid``, ``masks [1, D, 28, 28]`` in their
    boxes). The resize before and the pasting after stay outside, as
    [`detect`][lambda_keras.detection.detect.detect] does them (``transform.resized_size``,
    ``transform.to_photo``). Needs ``tf2onnx`` and ``onnx``; Keras on TensorFlow.

    Args:
        image_size: As in [`export_detector`][lambda_keras.detection.serving.export_detector].
        canvas: ``(H, W)``, multiples of 64; default the transform's first (landscape) one.

    Raises:
        TypeError: ``model`` is not a `MaskRCNN` or ``path`` is not a path.
        ValueError: as in [`export_detector`][lambda_keras.detection.serving.export_detector] (a
            bad ``image_size``, an unbuilt model), a bad ``canvas``, or Keras on JAX or PyTorch.
    """
    _check_export(model, path, image_size, "file")
    if keras.backend.backend() != "tensorflow":
        raise ValueError(
            "export_detector_onnx exports through tf2onnx with Keras on TensorFlow; this process "
            f"runs Keras on {keras.backend.backend()!r} (save a .keras file and export it there)."
        )
    transform = model.input_transform(image_size)
    canvas = tuple(canvas) if canvas is not None else transform.canvases((1, 1))[0][0]
    if len(canvas) != 2 or any(check_image_size(side, "canvas") != side for side in canvas):
        raise ValueError(f"`canvas` must be (height, width); received {canvas!r}.")
    images = keras.InputSpec(shape=(1, *canvas, 3), dtype="float32")
    if transform.size_divisible is None:  # the letterbox: the image fills its square
        signature = [images]
    else:
        sizes = keras.InputSpec(shape=(1, 2), dtype="int32")
        signature = [{"images": images, "image_sizes": sizes}]
    model.export(str(path), format="onnx", input_signature=signature, verbose=False)
    return str(path)


def _check_export(model, path, image_size, path_kind: str = "directory") -> None:
    """Refuse what an export cannot take before anything is saved or traced (on JAX and
    PyTorch, before a child process would find it); ``path_kind`` names what ``path`` is
    (``"directory"``: a SavedModel; ``"file"``)."""
    if not isinstance(model, keras.Model) or not hasattr(model, "input_transform"):
        raise TypeError(f"`model` must be a MaskRCNN; received {type(model).__name__}.")
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"`path` must be a {path_kind} path; received {path!r}.")
    model.input_transform(image_size)  # a bad image_size raises here
    check_categories(model.categories, model.num_classes, "model.categories")
    if not model.built:
        raise ValueError(
            "`model` must be built before it is exported (its weights are what is exported): "
            "call it on a batch, fit it or `model.build((None, None, None, 3))`; received an "
            f"unbuilt {type(model).__name__}."
        )


def _detect_function(model, image_size, float64: bool):
    """The serving function of ``model`` (its arguments checked by ``_check_export``)."""
    transform = model.input_transform(image_size)

    def on_canvas(resized, size, canvas):
        padded = tf.image.pad_to_bounding_box(resized, 0, 0, *canvas)
        return model(transform.model_inputs(padded, size), training=False)

    def detect(image):
        shape = tf.shape(image)[:2]
        resized, size = transform_graph.resize(transform, image, float64=float64)
        canvases, first = transform.canvases(size)
        if len(canvases) == 1:
            out = on_canvas(resized, size, canvases[0])
        else:  # the one that fits the photo's orientation
            out = tf.cond(
                first,
                lambda: on_canvas(resized, size, canvases[0]),
                lambda: on_canvas(resized, size, canvases[1]),
            )
        boxes, masks = transform.to_photo(out["boxes"][0], out["masks"][0], size, shape)
        return outputs(out, boxes, masks)

    return detect


if __name__ == "__main__":  # export_detector_keras_file's child: KERAS_PATH EXPORT_DIR SIZE
    import sys

    import lambda_keras  # noqa: F401  (registers the layers)
    import lambda_keras.detection  # noqa: F401

    keras_path, export_dir, size = sys.argv[1:]
    # Without the compile config (see lambda_keras.zoo.serving: a PyTorch run's optimizer).
    model = keras.saving.load_model(keras_path, compile=False)
    export_detector(model, export_dir, int(size) or None)
