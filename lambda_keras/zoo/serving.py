"""SavedModel export for serving: uint8 images of any size, or encoded JPEG/PNG bytes.

The resize, centre crop and ImageNet normalisation of evaluation run inside the graph, so a
client sends raw pixels or files. Signatures:

* ``serving_default`` / ``serve_images``: ``images`` uint8 ``[batch, height, width, 3]``;
* ``serve_bytes``: ``image_bytes`` string ``[batch]`` (JPEG, PNG, BMP or GIF files).

Both return ``probabilities`` ``[batch, classes]`` and ``classes`` int64 ``[batch]``.

The serving graph is TensorFlow's: with Keras on another backend (JAX, PyTorch), a model is exported
through a ``.keras`` file by a TensorFlow-backend process
([`export_keras_file`][lambda_keras.zoo.serving.export_keras_file]).
"""

from __future__ import annotations

import os
import sys
import tempfile

from lambda_keras.backend.requirements import require_tensorflow

# The zoo runs on every backend without TensorFlow; this module writes its SavedModels (as it
# did under lambda_keras.training, whose guard named what to install).
require_tensorflow("lambda_keras.zoo.serving", "writes TensorFlow SavedModels")

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

from lambda_keras import _validation as v  # noqa: E402
from lambda_keras.backend.tensorflow_child import run_on_tensorflow  # noqa: E402
from lambda_keras.preprocessing import check_crop_fraction, eval_image, normalize  # noqa: E402

__all__ = ["export_for_serving", "export_keras_file"]


def export_for_serving(
    model: keras.Model, path: str, image_size: int, crop_fraction: float = 0.875
) -> str:
    """Write ``model`` with the two serving signatures to ``path``; returns ``path``.

    With Keras on another backend than TensorFlow, the model is saved to a temporary ``.keras`` file
    that a TensorFlow-backend process exports
    ([`export_keras_file`][lambda_keras.zoo.serving.export_keras_file]): its layers must be
    registered serializable there (every ``lambda_keras`` layer is).
    """
    if not isinstance(model, keras.Model):
        raise TypeError(f"`model` must be a keras.Model; received {type(model).__name__}.")
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"`path` must be a directory path; received {path!r}.")
    v.positive_int("image_size", image_size)
    check_crop_fraction(crop_fraction)
    if keras.backend.backend() != "tensorflow":
        with tempfile.TemporaryDirectory() as folder:
            keras_path = os.path.join(folder, "model.keras")
            model.save(keras_path)
            return export_keras_file(keras_path, str(path), image_size, crop_fraction)

    def classify(images):
        images = normalize(images)
        probabilities = tf.cast(model(images, training=False), tf.float32)
        return {"probabilities": probabilities, "classes": tf.argmax(probabilities, axis=-1)}

    def prepare(image):
        image = eval_image(image, image_size, crop_fraction)
        return tf.ensure_shape(image, (image_size, image_size, 3))

    def serve_images(images):
        return classify(tf.map_fn(prepare, images, fn_output_signature=tf.float32))

    def serve_bytes(image_bytes):
        def decode(data):
            return prepare(tf.io.decode_image(data, channels=3, expand_animations=False))

        return classify(tf.map_fn(decode, image_bytes, fn_output_signature=tf.float32))

    archive = keras.export.ExportArchive()
    archive.track(model)
    images_spec = tf.TensorSpec([None, None, None, 3], tf.uint8, name="images")
    bytes_spec = tf.TensorSpec([None], tf.string, name="image_bytes")
    archive.add_endpoint("serve_images", serve_images, input_signature=[images_spec])
    archive.add_endpoint("serve_bytes", serve_bytes, input_signature=[bytes_spec])
    archive.add_endpoint("serving_default", serve_images, input_signature=[images_spec])
    archive.write_out(path, verbose=False)
    return path


def export_keras_file(
    keras_path: str, path: str, image_size: int, crop_fraction: float = 0.875
) -> str:
    """[`export_for_serving`][lambda_keras.zoo.serving.export_for_serving] of the model in the
    ``.keras`` file ``keras_path``, from any
    Keras backend: in this process on TensorFlow, else in a child process running Keras on
    TensorFlow (the file is backend-neutral). Returns ``path``.

    Raises:
        RuntimeError: the child process failed; its error output is in the message.
    """
    v.positive_int("image_size", image_size)
    check_crop_fraction(crop_fraction)
    if keras.backend.backend() == "tensorflow":
        model = keras.saving.load_model(keras_path)
        return export_for_serving(model, path, image_size, crop_fraction)
    run_on_tensorflow(
        __name__, [keras_path, path, image_size, crop_fraction], f"Exporting {keras_path}"
    )
    return path


if __name__ == "__main__":  # export_keras_file's child: KERAS_PATH EXPORT_DIR SIZE CROP
    import lambda_keras.layers  # noqa: F401  (registers the layers)

    keras_path, export_dir, size, crop = sys.argv[1:]
    # Without the compile config: serving needs no optimizer, and a file written on PyTorch
    # names torch's, which would import torch after TensorFlow (a crash in one process).
    model = keras.saving.load_model(keras_path, compile=False)
    export_for_serving(model, export_dir, int(size), float(crop))
