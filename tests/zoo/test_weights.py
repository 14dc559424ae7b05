"""The pretrained-weights path end to end, with weights the test creates and serves locally."""

import hashlib

import numpy as np
import pytest

from lambda_keras import zoo
from lambda_keras.zoo import weights as weights_lib
from tests.backend import numpy

SHAPE = (64, 64, 3)


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def published(tmp_path, monkeypatch):
    """A trained-looking LambdaMobileNetV2 saved to a file, registered with a file:// URL."""
    monkeypatch.setattr(weights_lib, "CACHE_DIR", str(tmp_path / "cache"))
    source = zoo.LambdaMobileNetV2(alpha=0.35, input_shape=SHAPE, classes=6)
    rng = np.random.default_rng(0)
    source.set_weights(
        [w + rng.normal(0, 0.01, w.shape).astype(w.dtype) for w in source.get_weights()]
    )
    path = tmp_path / "served" / "lambda_mnv2.weights.h5"
    path.parent.mkdir()
    source.save_weights(path)
    spec = weights_lib.WeightsSpec(
        name="test_lambda_mnv2",
        url=path.as_uri(),
        sha256=sha256(path),
        architecture="lambda_mobilenet_v2",
        input_size=64,
        classes=6,
    )
    weights_lib.register_weights(spec)
    yield source, spec, path
    weights_lib.unregister_weights(spec.name)


def test_registered_weights_load_identically(published):
    source, spec, _ = published
    model = zoo.LambdaMobileNetV2(alpha=0.35, weights=spec.name, classes=6)
    assert model.input.shape == (None, 64, 64, 3)  # the weights' input size by default
    x = np.random.default_rng(1).normal(size=(2, *SHAPE)).astype("float32")
    np.testing.assert_allclose(numpy(model(x)), numpy(source(x)), rtol=1e-6, atol=1e-6)
    assert zoo.registered_weights("lambda_mobilenet_v2") == {spec.name: spec}


def test_include_top_false_loads_the_backbone(published):
    source, spec, _ = published
    backbone = zoo.LambdaMobileNetV2(
        alpha=0.35, weights=spec.name, include_top=False, pooling="avg"
    )
    x = np.random.default_rng(2).normal(size=(1, *SHAPE)).astype("float32")
    import keras

    reference = keras.Model(source.input, source.get_layer("features").output)
    expected = numpy(reference(x)).mean(axis=(1, 2))
    np.testing.assert_allclose(numpy(backbone(x)), expected, rtol=1e-5, atol=1e-6)
    assert "predictions" not in [layer.name for layer in backbone.layers]


def test_weights_from_a_file_path(published):
    source, _, path = published
    model = zoo.LambdaMobileNetV2(alpha=0.35, input_shape=SHAPE, classes=6, weights=str(path))
    np.testing.assert_array_equal(model.get_weights()[0], source.get_weights()[0])


def test_checksum_mismatch_loads_nothing_and_removes_the_download(published, tmp_path):
    _, spec, path = published
    path.write_bytes(path.read_bytes()[:-10] + b"corrupted!")
    with pytest.raises(ValueError, match=f"expected SHA-256 {spec.sha256} .*removed and nothing"):
        zoo.LambdaMobileNetV2(alpha=0.35, weights=spec.name, classes=6)
    assert list((tmp_path / "cache" / "lambda_keras").iterdir()) == []


def test_weights_for_another_architecture(published):
    _, spec, _ = published
    with pytest.raises(
        ValueError, match="trained for architecture 'lambda_mobilenet_v2', not 'mobilenet_v2'"
    ):
        zoo.MobileNetV2(weights=spec.name, classes=6)


def test_unknown_name_lists_the_known_ones(published):
    with pytest.raises(ValueError, match=r"Unknown weights 'imagenet'.*test_lambda_mnv2"):
        zoo.LambdaMobileNetV2(weights="imagenet")


def test_classes_must_match_registered_weights_with_top(published):
    _, spec, _ = published
    with pytest.raises(ValueError, match="classes` must be 6"):
        zoo.LambdaMobileNetV2(alpha=0.35, weights=spec.name, classes=1000)


def test_missing_file_and_wrong_architecture_file(published, tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        zoo.LambdaMobileNetV2(weights=str(tmp_path / "nope.weights.h5"))
    _, _, path = published
    with pytest.raises(ValueError, match="do not fit"):
        zoo.MobileNetV2(alpha=0.35, input_shape=SHAPE, classes=6, weights=str(path))


@pytest.mark.parametrize(
    "fields, message",
    [
        (dict(url="file:///x", sha256="abc"), "whole SHA-256"),
        (dict(url="file:///x", sha256="0" * 64, preprocessing="bgr"), "`preprocessing` must be"),
        (dict(sha256="0" * 64), "exactly one of `url` and `hub_repo`"),
        (dict(url="file:///x", integrity="hub_latest"), "checks a Hub file"),
        (dict(url="file:///x", sha256="0" * 64, metrics={"top1": 1.0}), "`metrics` of 'x'"),
        (dict(hub_repo="a/b", sha256="0" * 64, hub_revision="v1.0"), "a commit or main"),
        (dict(url="file:///x", sha256="0" * 64, license="MIT"), "`license` and `license_source`"),
    ],
)
def test_spec_validation(fields, message):
    with pytest.raises(ValueError, match=message):
        weights_lib.WeightsSpec(name="x", architecture="resnet50", input_size=224, **fields)
    with pytest.raises(TypeError, match="`spec` must be a WeightsSpec"):
        weights_lib.register_weights({"name": "x"})


def test_a_converter_whose_module_is_missing_stops_before_the_download(tmp_path, monkeypatch):
    """A converter that needs a module (``register_converter(needs=...)``): without it, an
    ImportError naming it before anything is fetched (a checkpoint may be hundreds of MB)."""
    monkeypatch.setattr(weights_lib, "CACHE_DIR", str(tmp_path / "cache"))
    checkpoint = tmp_path / "model-00000000.pth"
    checkpoint.write_bytes(b"not fetched")
    spec = weights_lib.WeightsSpec(
        name="needs_a_module",
        url=checkpoint.as_uri(),
        sha256="0" * 64,
        architecture="lambda_mobilenet_v2",
        input_size=64,
        source_format="torchvision",
    )
    converted = []
    convert = lambda model, path, spec: converted.append(path)  # noqa: E731
    monkeypatch.setitem(
        weights_lib._CONVERTERS, "torchvision", (convert, ("no_such_module_of_lambda_keras",))
    )
    with pytest.raises(ImportError, match="needing no_such_module_of_lambda_keras.*downloaded"):
        weights_lib.load_registered(object(), spec)
    assert not converted and not list((tmp_path / "cache" / "lambda_keras").glob("*.pth"))


def test_every_registered_file_states_its_terms_and_where():
    """The weights table's license column comes from these two fields, for every file."""
    import lambda_keras.detection  # noqa: F401  (registers torchvision's COCO weights)

    specs = weights_lib.registered_weights().values()
    assert len(specs) >= 10
    for spec in specs:
        assert spec.license and spec.license_source.startswith("https://"), spec.name
