"""The serving SavedModel: a small classifier's in the quick tier; a zoo model's in this process
and in a fresh one that imports only TensorFlow (end to end)."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import keras
import numpy as np
import pytest
import sklearn

from lambda_keras import zoo
from lambda_keras.zoo.serving import export_for_serving
from tests.backend import numpy

CHINA = Path(sklearn.__file__).parent / "datasets" / "images" / "china.jpg"  # a real photo


@pytest.mark.end_to_end
def test_both_signatures_classify_a_real_photo_in_a_fresh_process(tmp_path):
    model = zoo.MobileNetV2(alpha=0.35, input_shape=(64, 64, 3), classes=5)
    export_for_serving(model, str(tmp_path / "serving"), image_size=64)
    script = textwrap.dedent(
        f"""
        import json, sys
        import tensorflow as tf
        served = tf.saved_model.load({str(tmp_path / "serving")!r})
        data = tf.io.read_file({str(CHINA)!r})
        pixels = tf.io.decode_jpeg(data)[None]
        by_pixels = served.signatures["serve_images"](images=pixels)
        by_bytes = served.signatures["serve_bytes"](image_bytes=tf.stack([data]))
        default = served.signatures["serving_default"](images=pixels)
        errors = []
        for bad in (tf.cast(pixels, tf.float32), pixels[0]):
            try:
                served.signatures["serve_images"](images=bad)
            except (TypeError, ValueError, tf.errors.InvalidArgumentError) as err:
                errors.append(str(err))
        print(json.dumps({{
            "modules": sorted(m for m in sys.modules if m.startswith("lambda_keras")),
            "shape": list(pixels.shape),
            "pixels": by_pixels["probabilities"].numpy().tolist(),
            "bytes": by_bytes["probabilities"].numpy().tolist(),
            "default": default["classes"].numpy().tolist(),
            "errors": errors,
        }}))
        """
    )
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONPATH": ""}
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["modules"] == []  # served with TensorFlow alone
    assert out["shape"] == [1, 427, 640, 3]
    by_pixels = np.array(out["pixels"])
    assert by_pixels.shape == (1, 5)
    np.testing.assert_allclose(by_pixels.sum(), 1.0, rtol=1e-5)
    np.testing.assert_allclose(np.array(out["bytes"]), by_pixels, rtol=1e-5, atol=1e-6)
    assert out["default"] == [int(by_pixels.argmax())]
    assert len(out["errors"]) == 2 and "uint8" in out["errors"][0]


def small_classifier() -> keras.Model:
    """Three classes from one convolution: the serving graph around it is what is tested."""
    inputs = keras.Input((32, 32, 3))
    x = keras.layers.Conv2D(4, 3, strides=2)(inputs)
    x = keras.layers.GlobalAveragePooling2D()(x)
    return keras.Model(inputs, keras.layers.Dense(3, activation="softmax")(x))


def small_mobilenet() -> keras.Model:
    return zoo.MobileNetV2(alpha=0.35, input_shape=(64, 64, 3), classes=5)


@pytest.mark.parametrize(
    "build, image_size",
    [
        pytest.param(small_classifier, 32, id="small_classifier"),  # the quick tier's
        pytest.param(small_mobilenet, 64, id="mobilenet_v2", marks=pytest.mark.end_to_end),
    ],
)
def test_in_process_photos_and_files_give_the_model_on_the_centre_crop(
    build, image_size, tmp_path
):
    import tensorflow as tf

    from lambda_keras.preprocessing import eval_image, normalize

    model = build()
    path = export_for_serving(model, str(tmp_path / "s"), image_size=image_size)
    served = tf.saved_model.load(path)
    rng = np.random.default_rng(0)
    for shape in ((80, 100), (100, 80), (80, 80)):  # landscape, upright, square
        image = rng.integers(0, 256, (*shape, 3), dtype=np.uint8)
        crop = eval_image(tf.constant(image), image_size, 0.875)
        expected = numpy(model(normalize(crop)[None]))
        by_pixels = served.signatures["serve_images"](images=tf.constant(image[None]))
        png = tf.io.encode_png(tf.constant(image))
        by_bytes = served.signatures["serve_bytes"](image_bytes=tf.stack([png]))
        for found in (by_pixels, by_bytes):
            got = found["probabilities"].numpy()
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
            assert found["classes"].numpy().tolist() == [int(expected.argmax())]
