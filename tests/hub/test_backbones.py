"""The zoo's pyramid backbones in keras-hub (lambda_keras/hub/backbones.py): a preset saved
with keras-hub's `save_to_preset` loads through keras-hub's own `Backbone.from_preset` as the
same class with the same P2-P5 (the output is P5, as keras-hub's ResNet's), a preset of
another class is refused by keras-hub, a RetinaNet on a backbone trains a step and predicts, the
configuration is the constructor's arguments, frozen batch norm stays frozen, a preset loads
without its weights or at another precision, a dtype policy reaches the nested body's layers
(quantized ones refused), and bad image shapes are refused naming `image_shape`. Run on
TensorFlow here and in the JAX and PyTorch children of tests/test_backends.py. Importing
`import lambda_keras` registers the hub classes where keras-hub is installed; without it,
lambda_keras works and `lambda_keras.hub` says how to install it."""

import json
import subprocess
import sys

import keras
import numpy as np
import pytest

from tests.backend import child_env, numpy

keras_hub = pytest.importorskip("keras_hub")

from lambda_keras.hub import (  # noqa: E402
    LambdaResNetBackbone,
    ResNetRSBackbone,
    TimmLambdaResNetBackbone,
)

TINY = {"width_multiplier": 0.125}  # depth 50, the smallest pyramid depth


def pyramid(backbone, images, predict_output: bool = True) -> dict:
    """The backbone's P2-P5 on ``images``; its output is P5, as keras-hub's ResNet's (by its
    prediction where ``predict_output``, else as the same symbolic tensor)."""
    assert backbone.output is backbone.pyramid_outputs["P5"]
    # a plain dict: the attribute is Keras' tracked dict, which JAX does not take as outputs
    levels = keras.Model(backbone.input, dict(backbone.pyramid_outputs)).predict(images, verbose=0)
    if predict_output:
        np.testing.assert_array_equal(backbone.predict(images, verbose=0), levels["P5"])
    return levels


@pytest.mark.parametrize(
    "cls, options",
    [
        (LambdaResNetBackbone, TINY),
        (ResNetRSBackbone, TINY),
        (TimmLambdaResNetBackbone, {"model": "lambda_resnet26t"}),
    ],
    ids=lambda value: getattr(value, "__name__", ""),
)
def test_a_preset_loads_through_keras_hub_as_the_same_backbone(cls, options, tmp_path):
    backbone = cls(**options)
    images = np.random.default_rng(0).normal(size=(2, 64, 96, 3)).astype("float32")
    expected = pyramid(backbone, images)
    backbone.save_to_preset(str(tmp_path))
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["registered_name"] == f"lambda_keras.hub>{cls.__name__}"
    for loader in (keras_hub.models.Backbone, cls):
        loaded = loader.from_preset(str(tmp_path))
        assert type(loaded) is cls
        assert isinstance(loaded, keras_hub.models.FeaturePyramidBackbone)
        got = pyramid(loaded, images, predict_output=False)  # the class's, predicted above
        assert sorted(got) == sorted(loaded.pyramid_outputs) == ["P2", "P3", "P4", "P5"]
        for level, stride in (("P2", 4), ("P3", 8), ("P4", 16), ("P5", 32)):
            assert got[level].shape[1:3] == (64 // stride, 96 // stride)
            np.testing.assert_array_equal(got[level], expected[level], err_msg=level)


def test_a_preset_of_another_class_is_refused_by_keras_hub(tmp_path):
    ResNetRSBackbone(**TINY).save_to_preset(str(tmp_path))
    with pytest.raises(ValueError, match="not a subclass of calling class `LambdaResNetBackbone`"):
        LambdaResNetBackbone.from_preset(str(tmp_path))


@pytest.mark.parametrize(
    "cls, options",
    [
        (LambdaResNetBackbone, {"implementation": "einsum", "c4": False}),
        (ResNetRSBackbone, {"se": False}),
    ],
)
def test_the_configuration_is_the_constructor_s_arguments(cls, options):
    backbone = cls(image_shape=(64, None, 3), batch_norm="frozen", **options, **TINY)
    config = backbone.get_config()
    expected = {"depth": 50, "image_shape": (64, None, 3), "batch_norm": "frozen", **options}
    assert {k: config[k] for k in expected} == expected
    assert config["width_multiplier"] == TINY["width_multiplier"]
    assert "weights" not in config  # a preset's weights come from its weights file
    again = cls.from_config(config)
    assert again.get_config() == config
    assert [w.shape for w in again.weights] == [w.shape for w in backbone.weights]


def test_frozen_batch_norm_stays_frozen_through_a_preset_and_trainable(tmp_path):
    LambdaResNetBackbone(batch_norm="frozen", **TINY).save_to_preset(str(tmp_path))
    loaded = keras_hub.models.Backbone.from_preset(str(tmp_path), trainable=False)
    assert loaded.trainable_weights == []
    loaded.trainable = True  # unfrozen to fine-tune: its batch norm stays frozen
    norms = [
        layer for layer in loaded._flatten_layers()
        if isinstance(layer, keras.layers.BatchNormalization)
    ]  # fmt: skip
    assert norms and not any(layer.trainable for layer in norms)
    assert loaded.trainable_weights and not any(
        "gamma" in w.path or "beta" in w.path for w in loaded.trainable_weights
    )


def test_a_preset_loads_without_its_weights_or_at_another_precision(tmp_path):
    backbone = LambdaResNetBackbone(**TINY)
    backbone.save_to_preset(str(tmp_path))
    images = np.random.default_rng(1).normal(size=(1, 64, 64, 3)).astype("float32")
    expected = backbone.predict(images, verbose=0)
    fresh = LambdaResNetBackbone.from_preset(str(tmp_path), load_weights=False)
    assert not np.array_equal(fresh.predict(images, verbose=0), expected)
    half = LambdaResNetBackbone.from_preset(str(tmp_path), dtype="bfloat16")
    assert keras.backend.standardize_dtype(half.predict(images, verbose=0).dtype) == "bfloat16"
    assert keras.config.dtype_policy().name == "float32"


def test_a_dtype_policy_reaches_the_body_s_layers():
    backbone = LambdaResNetBackbone(dtype="bfloat16", **TINY)
    convolutions = [
        layer for layer in backbone.layers[-1]._flatten_layers()
        if isinstance(layer, keras.layers.Conv2D)
    ]  # fmt: skip
    assert convolutions and {c.dtype_policy.name for c in convolutions} == {"bfloat16"}
    assert keras.config.dtype_policy().name == "float32"  # the global policy is left alone
    with pytest.raises(ValueError, match="`depth` must be one of"):
        LambdaResNetBackbone(depth=51, dtype="bfloat16")
    assert keras.config.dtype_policy().name == "float32"  # restored after an error too
    with pytest.raises(ValueError, match="dtype='int8_from_float32' \\(quantized\\)"):
        LambdaResNetBackbone(dtype="int8_from_float32", **TINY)


@pytest.mark.parametrize("depth", [50.0, [50], "50", True])
@pytest.mark.parametrize("cls", [LambdaResNetBackbone, ResNetRSBackbone], ids=lambda c: c.__name__)
def test_a_depth_other_than_an_allowed_int_is_refused_naming_it(cls, depth):
    """depth=50.0 was a KeyError ('lambda_resnet50.0'), depth=[50] an unhashable-type error."""
    with pytest.raises(ValueError) as error:
        cls(depth=depth, **TINY)
    message = str(error.value)
    assert "`depth` must be one of 50, 101, 152, 200, 270, 350, 420" in message
    assert f"received depth={depth!r}" in message


def test_a_numpy_int_depth_is_an_int_in_the_configuration():
    config = LambdaResNetBackbone(depth=np.int64(50), **TINY).get_config()
    assert type(config["depth"]) is int
    json.dumps(config)  # save_to_preset writes it as JSON


@pytest.mark.parametrize(
    "image_shape, match",
    [
        ((64, 64), r"`image_shape` must be \(height, width, channels\)"),
        ((65, 64, 3), r"received image_shape of shape \(65, 64, 3\)\."),  # no batch axis
    ],
)
def test_bad_image_shapes_are_refused_naming_the_argument(image_shape, match):
    with pytest.raises(ValueError, match=match) as error:
        LambdaResNetBackbone(image_shape=image_shape, **TINY)
    assert "image_shape" in str(error.value)


@pytest.mark.backends("tensorflow")  # once; the child needs no TensorFlow (Keras on JAX)
def test_import_lambda_keras_registers_the_hub_classes_where_keras_hub_is_installed():
    """keras-hub finds a preset's class by its registered name: `import lambda_keras` registers
    them. Without keras-hub, lambda_keras imports and works, and `lambda_keras.hub` says how to
    install it."""
    installed = (
        "import keras, lambda_keras\n"
        "name = 'lambda_keras.hub>TimmLambdaResNetImageClassifier'\n"
        "print(keras.saving.get_registered_object(name).__name__)\n"
    )
    assert run_on_jax(installed).strip().endswith("TimmLambdaResNetImageClassifier")
    missing = (
        "import sys\n"
        "sys.modules['keras_hub'] = None  # as if not installed\n"
        "import lambda_keras, lambda_keras.zoo, lambda_keras.detection\n"
        "assert 'lambda_keras.hub' not in sys.modules\n"
        "print(lambda_keras.zoo.get_model('lambda_resnet26t', weights=None).output_shape)\n"
        "try:\n"
        "    import lambda_keras.hub\n"
        "except ImportError as error:\n"
        "    print(error)\n"
    )
    printed = run_on_jax(missing)
    assert "(None, 1000)" in printed and 'pip install "lambda_keras[hub]"' in printed


def run_on_jax(code: str) -> str:
    """What ``code`` prints in a fresh Python process with Keras on JAX (it must succeed)."""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=child_env("jax")
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.end_to_end  # keras-hub's detector trained and run on the backbone
def test_a_retinanet_on_a_backbone_trains_a_step_and_predicts():
    """keras-hub's RetinaNet object detector on the hub backbone, at a tiny size."""
    encoder = LambdaResNetBackbone(image_shape=(64, 64, 3), **TINY)
    backbone = keras_hub.models.RetinaNetBackbone(
        image_encoder=encoder, min_level=3, max_level=5, use_p5=False, image_shape=(64, 64, 3)
    )
    detector = keras_hub.models.RetinaNetObjectDetector(
        backbone=backbone, num_classes=3, bounding_box_format="yxyx"
    )
    # keras-hub's losses; SGD, whose update traces in half the time of its default Adam's
    detector.compile(optimizer=keras.optimizers.SGD(0.01))
    images = np.random.default_rng(2).uniform(0, 1, (2, 64, 64, 3)).astype("float32")
    boxes = np.array([[[8, 8, 40, 40], [20, 24, 60, 56]]] * 2, "float32")
    labels = np.array([[0, 2]] * 2, "int32")
    before = {w.path: numpy(w).copy() for w in detector.trainable_weights}
    history = detector.fit(
        images, {"boxes": boxes, "labels": labels}, batch_size=2, epochs=1, verbose=0
    )
    assert np.isfinite(history.history["loss"][0])
    moved = {
        w.path for w in detector.trainable_weights if not np.array_equal(numpy(w), before[w.path])
    }
    assert "stem_1_conv/kernel" in moved  # the gradient reached the backbone's first layer
    found = detector.predict(images, verbose=0)
    assert {"boxes", "labels", "confidence", "num_detections"} <= set(found)
    assert found["boxes"].shape[0] == 2 and found["boxes"].shape[-1] == 4
