"""Pyramid backbones: levels and strides, any size divisible by 32, weights from the classifier,
batch-norm modes, saving."""

import hashlib

import keras
import numpy as np
import pytest

from lambda_keras import zoo
from lambda_keras.layers import LambdaLayer
from lambda_keras.zoo import weights as weights_lib
from tests.backend import numpy

SMALL = {"width_multiplier": 0.25}


def _images(height, width, batch=1, seed=0):
    return np.random.default_rng(seed).normal(size=(batch, height, width, 3)).astype("float32")


@pytest.mark.parametrize(
    "backbone, channels",
    [
        (lambda: zoo.LambdaResNetBackbone(50, **SMALL), (64, 128, 256, 512)),
        (lambda: zoo.ResNetRSBackbone(50, **SMALL), (64, 128, 256, 512)),
    ],
    ids=["lambda_resnet50", "resnet_rs50"],
)
def test_levels_strides_and_any_size_divisible_by_32(backbone, channels):
    model = backbone()
    assert list(model.pyramid_outputs) == ["P2", "P3", "P4", "P5"]
    assert [t.shape[-1] for t in model.pyramid_outputs.values()] == list(channels)
    for height, width in ((64, 96), (128, 32)):
        out = model(_images(height, width))
        for level, stride in (("P2", 4), ("P3", 8), ("P4", 16), ("P5", 32)):
            assert out[level].shape[1:3] == (height // stride, width // stride)


def test_c4_puts_lambda_layers_in_every_c4_block():
    plain = zoo.LambdaResNetBackbone(50, **SMALL)
    c4 = zoo.LambdaResNetBackbone(50, c4=True, **SMALL)
    count = lambda m: sum(isinstance(layer, LambdaLayer) for layer in m.layers)  # noqa: E731
    assert (count(plain), count(c4)) == (1 + 3, 6 + 3)  # Table 19: block 3 of c4 for depth 50
    assert all(
        layer.implementation == "conv" for layer in c4.layers if isinstance(layer, LambdaLayer)
    )


def test_saved_backbone_loads_with_its_pyramid(tmp_path):
    model = zoo.LambdaResNetBackbone(50, batch_norm="frozen", **SMALL)
    x = _images(64, 64)
    expected = model(x)
    model.save(tmp_path / "backbone.keras")
    loaded = keras.saving.load_model(tmp_path / "backbone.keras")
    assert isinstance(loaded, zoo.LambdaResNetBackbone)
    assert list(loaded.pyramid_outputs) == ["P2", "P3", "P4", "P5"]
    assert loaded.batch_norm == "frozen" and not loaded.c4
    got = loaded(x)
    for level in expected:
        np.testing.assert_allclose(numpy(got[level]), numpy(expected[level]), atol=1e-6)


def test_frozen_batch_norm_is_inference_mode():
    model = zoo.ResNetRSBackbone(50, batch_norm="frozen", **SMALL)
    norms = [
        layer
        for layer in model._flatten_layers()
        if isinstance(layer, keras.layers.BatchNormalization)
    ]
    assert norms and not any(layer.trainable for layer in norms)
    assert not any("gamma" in w.path or "beta" in w.path for w in model.trainable_weights)
    x = _images(64, 64)
    train, infer = model(x, training=True), model(x, training=False)
    np.testing.assert_allclose(numpy(train["P5"]), numpy(infer["P5"]), atol=1e-6)
    # Freezing the backbone, then unfreezing it to fine-tune, leaves its batch norm frozen.
    trainable = len(model.trainable_weights)
    model.trainable = False
    assert model.trainable_weights == []
    model.trainable = True
    assert not any(layer.trainable for layer in norms)
    assert model.trainable and len(model.trainable_weights) == trainable


def test_synchronized_batch_norm_reaches_the_lambda_layers():
    if keras.backend.backend() == "torch":
        with pytest.raises(ValueError, match="synchronized.*torch backend"):
            zoo.LambdaResNetBackbone(50, batch_norm="synchronized", **SMALL)
        return
    model = zoo.LambdaResNetBackbone(50, batch_norm="synchronized", **SMALL)
    norms = [
        layer
        for layer in model._flatten_layers()
        if isinstance(layer, keras.layers.BatchNormalization)
    ]
    lambda_norms = [layer.query_norm for layer in model.layers if isinstance(layer, LambdaLayer)]
    assert norms and lambda_norms
    # TensorFlow: Keras' cross-replica statistics. JAX: one program over every device computes
    # them over the global batch already, and Keras' synchronized=True does not run there.
    synchronized = keras.backend.backend() == "tensorflow"
    assert all(layer.synchronized == synchronized for layer in norms + lambda_norms)
    out = model(_images(64, 64, batch=2), training=True)  # runs outside a strategy too
    assert np.isfinite(numpy(out["P5"])).all()


def test_timm_backbone_is_the_timm_classifier_s_body_cut_at_each_stage():
    """Same layers and names as the zoo's port (its weights load by name), P2-P5 at the last
    block of each stage; its configuration round-trips and saving keeps the pyramid."""
    backbone = zoo.TimmLambdaResNetBackbone("lambda_resnet26t", batch_norm="frozen")
    classifier = zoo.LambdaResNet26T(input_shape=(64, 96, 3))
    classifier.set_weights(backbone.get_weights() + classifier.get_weights()[-2:])
    x = _images(64, 96)
    out = backbone(x)
    stages = {"P2": "c2_block2_out", "P3": "c3_block2_out", "P4": "c4_block2_out"}
    for level, layer in (*stages.items(), ("P5", "features")):
        expected = keras.Model(classifier.input, classifier.get_layer(layer).output)(x)
        np.testing.assert_allclose(numpy(out[level]), numpy(expected), atol=1e-4, err_msg=level)
    assert out["P3"].shape[1:] == (8, 12, 512)
    # relative position embeddings: a fixed size by default
    assert zoo.TimmLambdaResNetBackbone.default_input_shape("lambda_resnet26rpt_256") == (
        256,
        256,
        3,
    )
    config = backbone.get_config()
    assert {k: config[k] for k in ("model", "batch_norm", "implementation")} == {
        "model": "lambda_resnet26t",
        "batch_norm": "frozen",
        "implementation": "conv",
    }
    assert zoo.TimmLambdaResNetBackbone.from_config(config).get_config() == config


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"model": "lambda_resnet50"}, "`model` must be one of 'lambda_resnet26t'"),
        ({"model": "lambda_resnet50", "input_shape": (64, 64, 3)}, "`model` must be one of"),
        (
            {"model": "lambda_resnet26rpt_256", "input_shape": (None, None, 3)},
            "must have a known height and width",
        ),
        ({"input_shape": (96, 100, 3)}, "multiples of 32"),
        ({"batch_norm": "sync"}, "`batch_norm` must be one of"),
    ],
)
def test_timm_backbone_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        zoo.TimmLambdaResNetBackbone(**kwargs)


@pytest.fixture
def classifier_weights(tmp_path, monkeypatch):
    """A LambdaResNet-50 classifier's weights, registered with a file:// URL."""
    monkeypatch.setattr(weights_lib, "CACHE_DIR", str(tmp_path / "cache"))
    source = zoo.LambdaResNet50(input_shape=(64, 64, 3), classes=5, **SMALL)
    rng = np.random.default_rng(0)
    source.set_weights(
        [w + rng.normal(0, 0.05, w.shape).astype(w.dtype) for w in source.get_weights()]
    )
    path = tmp_path / "classifier.weights.h5"
    source.save_weights(path)
    spec = weights_lib.WeightsSpec(
        name="test_backbone_source",
        url=path.as_uri(),
        sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
        architecture="lambda_resnet50",
        input_size=64,
        classes=5,
    )
    weights_lib.register_weights(spec)
    yield source, spec
    weights_lib.unregister_weights(spec.name)


def test_loads_the_classifier_weights_without_its_head(classifier_weights):
    source, spec = classifier_weights
    backbone = zoo.LambdaResNetBackbone(50, weights=spec.name, **SMALL)
    assert backbone.input.shape == (None, None, None, 3)
    x = _images(64, 64, seed=3)
    expected = keras.Model(source.input, source.get_layer("c3_block4_out").output)(x)
    np.testing.assert_allclose(numpy(backbone(x)["P3"]), numpy(expected), atol=1e-5)
    expected = keras.Model(source.input, source.get_layer("features").output)(x)
    np.testing.assert_allclose(numpy(backbone(x)["P5"]), numpy(expected), atol=1e-4)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"depth": 34}, "`depth` must be one of 50, 101"),
        ({"depth": True}, "`depth`"),
        ({"batch_norm": "sync"}, "`batch_norm` must be one of 'standard'"),
        ({"input_shape": (100, 96, 3)}, "multiples of 32"),
        ({"input_shape": (224, 224)}, "`input_shape` must be"),
        ({"c4": "yes"}, "`c4` must be True or False"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        zoo.LambdaResNetBackbone(**{**SMALL, **kwargs})


def test_image_not_divisible_by_32_is_refused_before_tracing():
    model = zoo.ResNetRSBackbone(50, se=False, **SMALL)
    with pytest.raises(ValueError, match=r"multiples of 32.*\(1, 50, 64, 3\)") as info:
        model(np.zeros((1, 50, 64, 3), "float32"))
    assert "Arguments received" not in str(info.value)


def test_plugs_into_keras_hub_retinanet():
    """keras-hub is the ``[hub]`` extra (and in ``[test]``): the zoo's own backbone as a
    RetinaNet's image encoder (lambda_keras.hub has it as a keras-hub backbone)."""
    keras_hub = pytest.importorskip("keras_hub")
    encoder = zoo.LambdaResNetBackbone(50, **SMALL)
    detector_backbone = keras_hub.models.RetinaNetBackbone(
        image_encoder=encoder, min_level=3, max_level=7, use_p5=False
    )
    out = detector_backbone(_images(128, 128))
    assert sorted(out) == ["P3", "P4", "P5", "P6", "P7"]
    assert out["P3"].shape[1:3] == (16, 16) and out["P7"].shape[1:3] == (1, 1)
