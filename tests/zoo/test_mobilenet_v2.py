"""MobileNetV2 and MobileNetV2 with lightweight lambda blocks."""

import keras
import numpy as np
import pytest

from lambda_keras.layers import LambdaLayer
from lambda_keras.zoo import LambdaMobileNetV2, MobileNetV2


def trainable(model):
    return sum(int(np.prod(w.shape)) for w in model.trainable_weights)


@pytest.mark.parametrize("alpha", [0.35, 1.0, 1.4])
def test_baseline_matches_keras_applications(alpha):
    ours = MobileNetV2(alpha=alpha, input_shape=(96, 96, 3))
    reference = keras.applications.MobileNetV2(alpha=alpha, weights=None, input_shape=(96, 96, 3))
    assert trainable(ours) == trainable(reference)
    assert ours.get_layer("features").output.shape == reference.layers[-3].output.shape


def test_lambda_blocks_replace_the_10th_and_16th_bottlenecks():
    model = LambdaMobileNetV2()
    lambdas = [lay for lay in model.layers if isinstance(lay, LambdaLayer)]
    assert [lay.name for lay in lambdas] == ["block10_lambda", "block16_lambda"]
    for layer, channels, side in zip(lambdas, (64, 160), (14, 7), strict=True):
        assert (layer.key_dim, layer.num_heads, layer.scope_size) == (32, 4, 5)
        assert layer.input.shape == (None, side, side, channels)  # no expansion
    assert not any(lay.name.startswith("block10_depthwise") for lay in model.layers)
    assert model.get_layer("block10_expand").filters == 64


def test_forward_and_alpha():
    model = LambdaMobileNetV2(alpha=0.5, input_shape=(64, 64, 3), classes=4)
    probs = model(np.random.default_rng(0).normal(size=(2, 64, 64, 3)).astype("float32"))
    assert probs.shape == (2, 4)
    features = LambdaMobileNetV2(
        alpha=0.75, include_top=False, pooling="avg", input_shape=(64, 64, 3)
    )
    assert features.output.shape == (None, 1280)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(lambda_blocks=(4,)), "lambda_blocks"),  # a stride-2 block
        (dict(lambda_blocks=(1,)), "lambda_blocks"),  # no expansion, 32 -> 16 channels
        (dict(lambda_blocks=(18,)), "lambda_blocks"),
        (dict(alpha=0), "alpha"),
        (dict(num_heads=3), "num_heads"),
    ],
)
def test_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        LambdaMobileNetV2(**kwargs)


@pytest.mark.parametrize("lambda_blocks", [5, "10,16", None, 10.0])
def test_lambda_blocks_must_be_a_sequence(lambda_blocks):
    """Before: `'int' object is not iterable`, and a string split into its characters."""
    with pytest.raises(TypeError) as error:
        LambdaMobileNetV2(lambda_blocks=lambda_blocks)
    message = str(error.value)
    assert "`lambda_blocks` must be a list of 1-indexed block numbers" in message
    assert f"received lambda_blocks={lambda_blocks!r}" in message


def test_lambda_blocks_are_ints():
    with pytest.raises(ValueError, match=r"`lambda_blocks` holds the 1-indexed numbers \(ints\)"):
        LambdaMobileNetV2(lambda_blocks=(10.0, 16))
    with pytest.raises(ValueError, match=r"received lambda_blocks=\(99,\)"):  # a set is taken
        LambdaMobileNetV2(lambda_blocks={99})
