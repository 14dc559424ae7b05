"""The project's keras-hub presets (lambda_keras/hub/presets.py), made from the registered
ImageNet weights served by the local Hub mirror (tests/pretrained_mirror.py): keras-hub's own
loaders give `get_model(name, weights="imagenet")`'s predictions on real photos of three
shapes; the preset is cached beside a manifest and checked; a tampered download is refused and
nothing is saved; a damaged preset is made again; bad names, a newer format, unknown saved
arguments, a missing file and another class's preset get clear errors. Run on TensorFlow here
and in the JAX and PyTorch children of tests/test_backends.py."""

import json
import os
import shutil
from pathlib import Path

import keras
import numpy as np
import pytest

keras_hub = pytest.importorskip("keras_hub")

import lambda_keras.hub  # noqa: E402
from lambda_keras import preprocessing, zoo  # noqa: E402
from lambda_keras.hub import presets  # noqa: E402
from lambda_keras.zoo import weights as weights_lib  # noqa: E402
from tests.backend import numpy  # noqa: E402
from tests.pretrained_mirror import (  # noqa: E402
    imagenet_specs,
    pretrained_mirror,
    publish,
    tamper,
)

IMAGENET = imagenet_specs()


def photos() -> list[np.ndarray]:
    """Real photos of three shapes: landscape (427x640), upright (640x427), square (427x427)."""
    from sklearn.datasets import load_sample_images

    china, flower = load_sample_images().images
    return [china, np.ascontiguousarray(flower.transpose(1, 0, 2)), china[:, 100:527]]


@pytest.fixture
def hub(tmp_path, monkeypatch):
    monkeypatch.setattr(weights_lib, "CACHE_DIR", str(tmp_path / "cache"))
    with pretrained_mirror(monkeypatch) as local:
        yield local


def zoo_predictions(architecture: str, photos: list[np.ndarray]) -> list[tuple[np.ndarray, ...]]:
    """What the zoo's documented recipe gives on each photo: the preprocessed photo (its
    evaluation crop), and the probabilities and final feature map of ``get_model(architecture,
    weights="imagenet")`` on it."""
    spec = IMAGENET[architecture]
    model = zoo.get_model(architecture, weights="imagenet")
    features = keras.Model(model.input, model.get_layer("features").output)
    found = []
    for photo in photos:
        crop = preprocessing.eval_image(photo, spec.input_size, spec.crop_fraction)
        image = zoo.applications.preprocess_input(np.array(crop))[None]
        found.append((image, numpy(model(image)), numpy(features(image))))
    return found


@pytest.mark.parametrize(
    "architecture",
    [
        # real photos through keras-hub's loaders: the end-to-end tier (and the JAX and PyTorch
        # children of tests/test_backends.py)
        pytest.param("lambda_resnet50ts", marks=pytest.mark.end_to_end),
        pytest.param("resnet_rs50", marks=pytest.mark.end_to_end),
        # the other timm ports (26rpt: a fixed 256x256 input) and another size and crop
        pytest.param("lambda_resnet26t", marks=pytest.mark.slow),
        pytest.param("lambda_resnet26rpt_256", marks=pytest.mark.slow),
        pytest.param("resnet_rs101", marks=pytest.mark.slow),
    ],
)
def test_keras_hub_s_loaders_give_get_model_s_predictions_on_real_photos(
    hub, architecture, monkeypatch
):
    publish(hub, architecture, monkeypatch)
    name = f"{architecture}_imagenet"
    assert name in lambda_keras.hub.list_presets()
    directory = lambda_keras.hub.preset_directory(name)
    classifier = keras_hub.models.ImageClassifier.from_preset(directory)
    backbone = keras_hub.models.Backbone.from_preset(directory)
    by_name = type(classifier).from_preset(name)  # the project's name, through the cache
    family = lambda_keras.hub.LambdaResNetImageClassifier.from_preset(name)  # every preset
    assert type(family) is type(classifier)
    assert type(type(classifier).from_preset(Path(directory))) is type(classifier)
    assert type(classifier).backbone_cls is type(backbone)
    shapes = photos()
    for photo, (image, expected, features) in zip(
        shapes, zoo_predictions(architecture, shapes), strict=True
    ):
        got = classifier.predict(photo[None], verbose=0)  # keras-hub crops it in tf.data
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-6)
        assert got.argmax() == expected.argmax()
        np.testing.assert_allclose(by_name.predict(photo[None], verbose=0), got, atol=1e-6)
        np.testing.assert_allclose(numpy(backbone(image)), features, rtol=1e-4, atol=1e-4)


def test_the_preset_is_made_once_and_checked_against_its_manifest(hub, monkeypatch):
    publish(hub, "lambda_resnet26t", monkeypatch)
    directory = Path(lambda_keras.hub.preset_directory("lambda_resnet26t_imagenet"))
    manifest = json.loads((directory / presets.MANIFEST).read_text())
    assert manifest["pin"] == presets._recipe(IMAGENET["lambda_resnet26t"])
    assert sorted([*manifest["files"], presets.MANIFEST]) == sorted(os.listdir(directory))
    assert {"config.json", "task.json", "preprocessor.json", "lambda_keras.json"} <= set(
        manifest["files"]
    )
    assert not [p for p in directory.parent.iterdir() if p.name.startswith(".staging-")]
    # keras-hub's metadata names the task class to load it with: the classifier's base
    tasks = json.loads((directory / "metadata.json").read_text())["tasks"]
    assert tasks == ["LambdaResNetImageClassifier"]
    made = directory.stat().st_mtime_ns
    hub.requests.clear()
    assert lambda_keras.hub.preset_directory("lambda_resnet26t_imagenet") == str(directory)
    assert hub.requests == [] and directory.stat().st_mtime_ns == made
    first = keras_hub.models.ImageClassifier.from_preset(str(directory))
    photo = photos()[0][None]
    expected = first.predict(photo, verbose=0)
    # A damaged file: the preset is made again from the checked weights (in the cache).
    weights_file = directory / "task.weights.h5"
    weights_file.write_bytes(weights_file.read_bytes()[:-8] + b"\0" * 8)
    with pytest.warns(UserWarning, match="does not hold the files its manifest records"):
        again = lambda_keras.hub.preset_directory("lambda_resnet26t_imagenet")
    classifier = keras_hub.models.ImageClassifier.from_preset(again)
    assert isinstance(classifier, lambda_keras.hub.TimmLambdaResNetImageClassifier)
    np.testing.assert_array_equal(classifier.predict(photo, verbose=0), expected)


def test_a_preset_made_by_another_release_is_made_again_without_a_warning(hub, monkeypatch):
    publish(hub, "lambda_resnet26t", monkeypatch)
    directory = Path(lambda_keras.hub.preset_directory("lambda_resnet26t_imagenet"))
    made = directory.stat().st_mtime_ns
    monkeypatch.setattr(lambda_keras, "__version__", "0.0.1")
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lambda_keras.hub.preset_directory("lambda_resnet26t_imagenet")
    assert not [w for w in caught if "manifest" in str(w.message)]
    assert directory.stat().st_mtime_ns != made
    manifest = json.loads((directory / presets.MANIFEST).read_text())
    assert manifest["pin"]["lambda_keras_version"] == "0.0.1"


def test_a_preset_made_meanwhile_by_another_process_is_kept(hub, monkeypatch):
    """Two processes making the same preset: the second rename finds the first's folder."""
    publish(hub, "lambda_resnet26t", monkeypatch)
    directory = lambda_keras.hub.preset_directory("lambda_resnet26t_imagenet")
    presets._make(IMAGENET["lambda_resnet26t"], directory)  # the slower process
    assert presets._preset_holds(directory, IMAGENET["lambda_resnet26t"])
    assert not [p for p in Path(directory).parent.iterdir() if p.name.startswith(".staging-")]


def test_the_preset_is_made_in_float32_whatever_the_global_policy(hub, monkeypatch):
    import keras

    publish(hub, "lambda_resnet26t", monkeypatch)
    keras.config.set_dtype_policy("mixed_bfloat16")
    try:
        directory = lambda_keras.hub.preset_directory("lambda_resnet26t_imagenet")
    finally:
        keras.config.set_dtype_policy("float32")
    classifier = keras_hub.models.ImageClassifier.from_preset(directory)
    assert {w.dtype for w in classifier.weights} == {"float32"}
    assert classifier.preprocessor.image_converter.dtype_policy.name == "float32"
    assert classifier.backbone.dtype_policy.name == "float32"


def test_a_tampered_download_is_refused_and_no_preset_is_saved(hub, monkeypatch):
    publish(hub, "lambda_resnet26t", monkeypatch)
    tamper(hub, "lambda_resnet26t")
    with pytest.raises(ValueError, match="expected SHA-256 .* nothing was loaded"):
        lambda_keras.hub.TimmLambdaResNetImageClassifier.from_preset("lambda_resnet26t_imagenet")
    folder = Path(weights_lib.cache_folder()) / "presets"
    assert not folder.exists() or os.listdir(folder) == []


def test_a_preset_of_another_class_is_refused_by_keras_hub(hub, monkeypatch):
    publish(hub, "lambda_resnet26t", monkeypatch)
    with pytest.raises(ValueError, match="compatible with TimmLambdaResNetBackbone"):
        lambda_keras.hub.ResNetRSImageClassifier.from_preset("lambda_resnet26t_imagenet")


def test_an_unknown_name_suggests_the_project_s_presets():
    with pytest.raises(ValueError, match="Did you mean 'lambda_resnet50ts_imagenet'"):
        presets.preset_weights("lambda_resnet50t_imagenet")
    assert set(lambda_keras.hub.list_presets()) == {
        f"{architecture}_imagenet" for architecture in IMAGENET
    }


@pytest.fixture
def tiny_preset(tmp_path):
    backbone = lambda_keras.hub.LambdaResNetBackbone(width_multiplier=0.125)
    classifier = lambda_keras.hub.LambdaResNetImageClassifier(backbone, num_classes=3)
    directory = tmp_path / "preset"
    classifier.save_to_preset(str(directory))
    return directory


def test_a_preset_of_a_newer_format_is_refused(tiny_preset):
    written = json.loads((tiny_preset / "lambda_keras.json").read_text())
    assert written == {
        "preset_format": presets.PRESET_FORMAT,
        "lambda_keras_version": lambda_keras.__version__,
        "files": sorted(set(os.listdir(tiny_preset)) - {"lambda_keras.json"}),
    }
    written["preset_format"] += 1
    (tiny_preset / "lambda_keras.json").write_text(json.dumps(written))
    with pytest.raises(ValueError, match="preset format 2; lambda_keras .* reads format 1"):
        lambda_keras.hub.LambdaResNetImageClassifier.from_preset(str(tiny_preset))


def test_saved_arguments_this_release_does_not_know_are_named(tiny_preset):
    """keras-hub's own loader (which reads no lambda_keras.json) meets the backbone's check."""
    config = json.loads((tiny_preset / "config.json").read_text())
    config["config"]["attention_window"] = 7
    (tiny_preset / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match=r"does not know: \['attention_window'\].*newer release"):
        keras_hub.models.Backbone.from_preset(str(tiny_preset))


def test_a_damaged_format_file_is_named(tiny_preset):
    (tiny_preset / "lambda_keras.json").write_text('{"preset_format": "one"')
    with pytest.raises(ValueError, match="lambda_keras.json' is damaged"):
        lambda_keras.hub.LambdaResNetImageClassifier.from_preset(str(tiny_preset))


def test_a_missing_file_is_named_and_nothing_is_loaded(tiny_preset):
    os.remove(tiny_preset / "task.weights.h5")
    with pytest.raises(ValueError, match=r"lacks \['task.weights.h5'\].*nothing was loaded"):
        lambda_keras.hub.LambdaResNetImageClassifier.from_preset(str(tiny_preset))
    # keras-hub's own loader gives such a preset a new head (its way to start a task from a
    # backbone's preset), which the docs say.
    fresh = keras_hub.models.ImageClassifier.from_preset(str(tiny_preset))
    assert isinstance(fresh, lambda_keras.hub.LambdaResNetImageClassifier)
    shutil.rmtree(tiny_preset)
    with pytest.raises((FileNotFoundError, ValueError), match="preset"):
        lambda_keras.hub.LambdaResNetImageClassifier.from_preset(str(tiny_preset))
