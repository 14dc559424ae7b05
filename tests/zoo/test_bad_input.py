"""Bad builder arguments and weights files: a clear error naming them, before building."""

import numpy as np
import pytest

from lambda_keras import zoo

BUILDER_CASES = {
    "nan_width": (dict(width_multiplier=float("nan")), ValueError, "`width_multiplier`"),
    "string_input_shape": (dict(input_shape="224"), TypeError, "`input_shape` must be a tuple"),
    "float_side": (dict(input_shape=(64.0, 64, 3)), ValueError, "`input_shape` must be"),
    "two_sides": (dict(input_shape=(64, 64)), ValueError, "`input_shape` must be"),
    "tiny_input": (dict(input_shape=(16, 16, 3)), ValueError, "at least 32x32"),
    "drop_path_2": (dict(stochastic_depth_rate=2.0), ValueError, "`stochastic_depth_rate`.*2.0"),
    "drop_path_negative": (dict(stochastic_depth_rate=-0.1), ValueError, "`stochastic_depth_rate`"),
    "dropout_negative": (dict(dropout_rate=-0.5), ValueError, "`dropout_rate`.*-0.5"),
    "dropout_one": (dict(dropout_rate=1.0), ValueError, "`dropout_rate`"),
    "zero_classes": (dict(classes=0), ValueError, "`classes` must be a positive integer"),
    "include_top_string": (
        dict(include_top="no"),
        TypeError,
        "`include_top` must be True or False",
    ),
    "pooling": (dict(pooling="sum"), ValueError, "`pooling` must be one of"),
    "activation": (dict(classifier_activation="nope"), ValueError, "`classifier_activation`"),
    "name": (dict(name=3), TypeError, "`name` must be a string"),
    "scope": (dict(scope_size=4), ValueError, "`scope_size`.*4"),
    "key_dim": (dict(key_dim=-16), ValueError, "`key_dim`"),
    "implementation": (dict(implementation="x"), ValueError, "`implementation`"),
    "weights_name": (dict(weights="imagenet21k"), ValueError, "Unknown weights 'imagenet21k'"),
    "weights_type": (dict(weights=3), TypeError, "`weights` must be None"),
    "input_tensor": (dict(input_tensor=np.zeros((1, 64, 64, 3))), TypeError, "`input_tensor`"),
}


@pytest.mark.parametrize("case", list(BUILDER_CASES))
def test_builder_arguments(case):
    kwargs, error, message = BUILDER_CASES[case]
    with pytest.raises(error, match=message):
        zoo.LambdaResNet50(**{"input_shape": (64, 64, 3), **kwargs})


@pytest.mark.parametrize("name", [None, 3, ["lambda_resnet50"]])
def test_get_model_needs_a_name(name):
    with pytest.raises(TypeError, match="must be a registered name"):
        zoo.get_model(name)
    with pytest.raises(TypeError, match="`pattern` must be a shell-style string"):
        zoo.list_models(name)


def test_resnet_rs_and_mobilenet_arguments():
    with pytest.raises(TypeError, match="`se` must be True or False"):
        zoo.ResNetRS50(se="yes")
    with pytest.raises(ValueError, match="`dropout_rate`"):
        zoo.MobileNetV2(dropout_rate=1.5)


def test_damaged_weights_file_is_named(tmp_path):
    model = zoo.MobileNetV2(alpha=0.35, input_shape=(64, 64, 3), classes=3)
    path = tmp_path / "m.weights.h5"
    model.save_weights(path)
    truncated = tmp_path / "truncated.weights.h5"
    truncated.write_bytes(path.read_bytes()[:5000])
    with pytest.raises(ValueError, match="truncated.weights.h5' is damaged or truncated"):
        zoo.MobileNetV2(alpha=0.35, input_shape=(64, 64, 3), classes=3, weights=str(truncated))
    garbage = tmp_path / "garbage.weights.h5"
    garbage.write_bytes(b"not an hdf5 file")
    with pytest.raises(ValueError, match="garbage.weights.h5' is damaged"):
        zoo.MobileNetV2(alpha=0.35, input_shape=(64, 64, 3), classes=3, weights=str(garbage))


@pytest.mark.parametrize("depth", [50.0, np.float32(101), [50], "50", True, 51])
@pytest.mark.parametrize("backbone", [zoo.LambdaResNetBackbone, zoo.ResNetRSBackbone])
def test_backbone_depth_names_the_allowed_depths(backbone, depth):
    """A float depth was taken for 50 and built `lambda_resnet50.0` (KeyError); a list failed
    on hashing."""
    with pytest.raises(ValueError) as error:
        backbone(depth=depth)
    message = str(error.value)
    assert "`depth` must be one of 50, 101, 152, 200, 270, 350, 420" in message
    assert f"received depth={depth!r}" in message


@pytest.mark.parametrize("input_shape", ["224,224,3", 224, {64, 3}])
def test_backbone_input_shape_must_be_a_sequence(input_shape):
    with pytest.raises(TypeError) as error:
        zoo.LambdaResNetBackbone(input_shape=input_shape)
    message = str(error.value)
    assert "`input_shape` must be a tuple (height, width, channels)" in message
    assert f"received input_shape={input_shape!r}" in message
