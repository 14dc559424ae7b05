"""keras-hub image classifiers on the zoo's backbones (lambda_keras/hub/image_classifier.py):
the image converter is the zoo's evaluation crop and normalisation on photos of three shapes
(one image, a batch, a list of sizes, a tf.data pipeline); a classifier trains a step, predicts
and round-trips through keras-hub's preset loader; the registry's weights land in the right
layers; bad arguments are named. Run on TensorFlow here and in the JAX and PyTorch children of
tests/test_backends.py."""

import json

import keras
import numpy as np
import pytest

keras_hub = pytest.importorskip("keras_hub")

import lambda_keras.hub  # noqa: E402
from lambda_keras import preprocessing  # noqa: E402
from lambda_keras.hub import image_classifier  # noqa: E402
from lambda_keras.zoo import applications, weights_spec  # noqa: E402
from tests.backend import numpy  # noqa: E402
from tests.hub.test_presets import photos  # noqa: E402

TORCH = image_classifier.normalization("torch")
# Outside tf.data the converter resizes with the backend's kernel: TensorFlow's own here, within
# 0.013 of it on the [0, 255] scale on JAX and PyTorch (2.3e-4 after normalisation).
ATOL = 2e-5 if keras.backend.backend() == "tensorflow" else 2.5e-4


def converter(size=64, crop_fraction=0.875, cls=lambda_keras.hub.TimmLambdaResNetImageConverter):
    return cls(image_size=(size, size), crop_fraction=crop_fraction, **TORCH)


def expected(photo, size=64, crop_fraction=0.875) -> np.ndarray:
    """The zoo's recipe: eval_image, then preprocess_input."""
    crop = np.array(preprocessing.eval_image(photo, size, crop_fraction))
    return np.asarray(applications.preprocess_input(crop))


@pytest.mark.parametrize("crop_fraction", [0.875, 1.0])
def test_the_converter_is_the_zoo_s_evaluation_crop_and_normalisation(crop_fraction):
    layer = converter(crop_fraction=crop_fraction)
    shapes = photos()
    for photo in shapes:  # landscape, upright, square; uint8
        got = numpy(layer(photo))
        assert got.shape == (64, 64, 3)
        np.testing.assert_allclose(got, expected(photo, 64, crop_fraction), atol=ATOL)
    batch = np.stack([shapes[0], shapes[0][::-1]]).astype("float32")
    np.testing.assert_allclose(
        numpy(layer(batch)), [expected(image, 64, crop_fraction) for image in batch], atol=ATOL
    )
    listed = numpy(layer(shapes))  # a list of three sizes: one batch
    np.testing.assert_allclose(
        listed, [expected(photo, 64, crop_fraction) for photo in shapes], atol=ATOL
    )


def test_the_preprocessor_crops_a_list_of_photos_of_several_sizes_one_by_one():
    """keras-hub's preprocessors pass such a list on as a ragged tensor: each image is cropped
    on its own, not padded to the largest first."""
    preprocessor = lambda_keras.hub.TimmLambdaResNetImageClassifierPreprocessor(converter())
    shapes = photos()
    np.testing.assert_allclose(
        numpy(preprocessor(shapes)), [expected(photo) for photo in shapes], atol=ATOL
    )


def test_the_converter_runs_in_a_tf_data_pipeline():
    import tensorflow as tf

    preprocessor = lambda_keras.hub.TimmLambdaResNetImageClassifierPreprocessor(converter())
    photo = photos()[1]
    dataset = tf.data.Dataset.from_tensors((photo, 3)).map(preprocessor)
    image, label = next(iter(dataset))
    np.testing.assert_allclose(image.numpy(), expected(photo), atol=2e-5)
    assert int(label) == 3
    shapes = photos()  # several sizes in one batch: a ragged batch in the graph
    ragged = tf.ragged.stack([tf.constant(photo) for photo in shapes])
    batch = next(iter(tf.data.Dataset.from_tensors(ragged).map(preprocessor)))
    np.testing.assert_allclose(
        batch.numpy(), [expected(photo) for photo in shapes], atol=2e-5
    )


def test_the_converter_s_configuration_round_trips():
    layer = converter(crop_fraction=0.95)
    config = layer.get_config()
    assert config["crop_fraction"] == 0.95 and config["interpolation"] == "bicubic"
    again = lambda_keras.hub.TimmLambdaResNetImageConverter.from_config(config)
    photo = photos()[2]
    np.testing.assert_array_equal(numpy(again(photo)), numpy(layer(photo)))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"image_size": (64, 96)}, "`image_size` must be a square"),
        ({"image_size": 64}, "`image_size` must be a square"),
        ({"image_size": (64, 64), "crop_fraction": 0.0}, "crop_fraction"),
        ({"image_size": (64, 64), "crop_fraction": 1.5}, "crop_fraction"),
    ],
)
def test_bad_converter_arguments_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        lambda_keras.hub.ResNetRSImageConverter(**kwargs)


def test_normalization_follows_the_weights_preprocessing():
    assert image_classifier.normalization("tf") == {"scale": 1.0 / 127.5, "offset": -1.0}
    assert set(weights_spec.PREPROCESSING_MODES) == {"torch", "tf", "caffe"}
    with pytest.raises(ValueError, match="must be 'torch' or 'tf'; received 'caffe'"):
        image_classifier.normalization("caffe")


def tiny_classifier():
    backbone = lambda_keras.hub.LambdaResNetBackbone(width_multiplier=0.125)
    preprocessor = lambda_keras.hub.LambdaResNetImageClassifierPreprocessor(
        converter(cls=lambda_keras.hub.LambdaResNetImageConverter)
    )
    return lambda_keras.hub.LambdaResNetImageClassifier(
        backbone, num_classes=3, preprocessor=preprocessor
    )


@pytest.mark.end_to_end  # trained, saved as a preset and loaded through keras-hub
def test_a_classifier_trains_a_step_predicts_and_loads_from_its_preset(tmp_path):
    classifier = tiny_classifier()
    # keras-hub's loss and metrics; SGD, whose update traces in half the time of its Adam's
    classifier.compile(optimizer=keras.optimizers.SGD(0.01))
    images = np.stack([photos()[2]] * 2)  # raw uint8 photos: the preprocessor crops them
    before = [numpy(w).copy() for w in classifier.trainable_weights]
    history = classifier.fit(images, np.array([0, 2]), batch_size=2, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    changed = {
        w.path: not np.array_equal(numpy(w), b)
        for w, b in zip(classifier.trainable_weights, before, strict=True)
    }
    # end to end: the head and the stem (residual branches start at zero, as in the zoo)
    assert changed["predictions/kernel"] and changed["stem_1_conv/kernel"]
    scores = classifier.predict(images, verbose=0)
    assert scores.shape == (2, 3) and np.isfinite(scores).all()
    classifier.save_to_preset(str(tmp_path))
    loaded = keras_hub.models.ImageClassifier.from_preset(str(tmp_path))
    assert type(loaded) is lambda_keras.hub.LambdaResNetImageClassifier
    assert type(loaded.preprocessor.image_converter) is lambda_keras.hub.LambdaResNetImageConverter
    # the paper's backbone: keras-hub's metadata names keras-hub's task class
    assert json.loads((tmp_path / "metadata.json").read_text())["tasks"] == ["ImageClassifier"]
    np.testing.assert_allclose(loaded.predict(images, verbose=0), scores, rtol=1e-5, atol=1e-6)


def test_the_registry_s_weights_are_assigned_by_name_or_refused():
    source = tiny_classifier()
    target = tiny_classifier()
    image_classifier._assign_by_path(source, target, "tiny")
    for a, b in zip(source.weights, target.weights, strict=True):
        np.testing.assert_array_equal(numpy(a), numpy(b))
    other = lambda_keras.hub.ResNetRSImageClassifier(
        lambda_keras.hub.ResNetRSBackbone(width_multiplier=0.125), num_classes=3
    )
    with pytest.raises(RuntimeError, match="does not have the zoo model's weights"):
        image_classifier._assign_by_path(source, other, "tiny")
