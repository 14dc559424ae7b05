"""swap_convolutions: lambda convolutions in place of the 3x3 convs of any Keras CNN."""

import keras
import numpy as np
import pytest

from lambda_keras.layers import LambdaConv2D, swap_convolutions


def trainable(model):
    return sum(int(np.prod(w.shape)) for w in model.trainable_weights)


@pytest.fixture(scope="module")
def resnet50():
    return keras.applications.ResNet50(weights=None, input_shape=(64, 64, 3), classes=10)


def test_all_lambda_resnet50_is_table_3s(resnet50):
    swapped = swap_convolutions(resnet50)
    lambdas = [layer for layer in swapped.layers if isinstance(layer, LambdaConv2D)]
    assert len(lambdas) == 16  # every bottleneck's 3x3
    assert not [
        layer
        for layer in swapped.layers
        if type(layer) is keras.layers.Conv2D and layer.kernel_size == (3, 3)
    ]
    # Table 3, "all lambda" ResNet-50: 15.0M parameters (1000 classes).
    full = swap_convolutions(keras.applications.ResNet50(weights=None))
    assert round(trainable(full) / 1e6, 1) == 15.0
    assert trainable(full) == 15_018_376
    x = np.random.default_rng(0).normal(size=(2, 64, 64, 3)).astype("float32")
    assert swapped(x).shape == (2, 10)


def test_c4_c5_only_is_table_12s_cclL_and_other_weights_are_kept(resnet50):
    swapped = swap_convolutions(resnet50, stages=("conv4", "conv5"))
    names = {layer.name for layer in swapped.layers if isinstance(layer, LambdaConv2D)}
    assert names == {
        f"conv{s}_block{b}_2_conv" for s, n in ((4, 6), (5, 3)) for b in range(1, n + 1)
    }
    for layer in swapped.layers:
        if layer.weights and layer.name not in names:
            for mine, theirs in zip(
                layer.get_weights(), resnet50.get_layer(layer.name).get_weights(), strict=True
            ):
                np.testing.assert_array_equal(mine, theirs)
    original = resnet50.get_layer("conv4_block1_2_conv")
    lam = swapped.get_layer("conv4_block1_2_conv")
    assert lam.filters == original.filters and lam.output.shape == original.output.shape


def test_predicate_and_strided_convs():
    inputs = keras.Input((16, 16, 8))
    x = keras.layers.Conv2D(16, 3, strides=2, padding="same", name="a_down")(inputs)
    x = keras.layers.Conv2D(16, 3, padding="same", name="a_keep")(x)
    model = keras.Model(inputs, keras.layers.Conv2D(4, 1, name="head")(x))
    swapped = swap_convolutions(
        model, predicate=lambda layer: layer.strides == (2, 2), kernel_size=5
    )
    down = swapped.get_layer("a_down")
    assert isinstance(down, LambdaConv2D) and down.strides == 2 and down.kernel_size == (5, 5)
    assert type(swapped.get_layer("a_keep")) is keras.layers.Conv2D
    assert swapped.output.shape == model.output.shape == (None, 8, 8, 4)


def test_errors(resnet50):
    with pytest.raises(ValueError, match=r"`stages` \['conv9'\] name no 3x3 Conv2D.*'conv2'"):
        swap_convolutions(resnet50, stages=("conv9",))
    with pytest.raises(TypeError, match=r"`stages` must be a stage name or a list of them; "
                       r"received stages=5 \(int\)"):
        swap_convolutions(resnet50, stages=5)
    with pytest.raises(ValueError, match=r"`stages` \['conv9'\] name no"):  # a set is a list
        swap_convolutions(resnet50, stages={"conv9"})
    no_3x3 = keras.Sequential([keras.Input((8, 8, 3)), keras.layers.Conv2D(4, 1)])
    with pytest.raises(ValueError, match="has no 3x3 Conv2D"):
        swap_convolutions(no_3x3)
    with pytest.raises(ValueError, match="No 3x3 Conv2D.*was chosen"):
        swap_convolutions(resnet50, predicate=lambda layer: False)
    valid = keras.Sequential([keras.Input((8, 8, 3)), keras.layers.Conv2D(8, 3, name="v")])
    with pytest.raises(ValueError, match="'v' cannot become a lambda convolution: padding='valid'"):
        swap_convolutions(valid)
    with pytest.raises(TypeError, match="`model` must be a keras.Model"):
        swap_convolutions("resnet50")
    with pytest.raises(ValueError, match="kernel_size"):
        swap_convolutions(resnet50, kernel_size=4)
    for heads in (0, "4", 4.0):  # named as itself, not as the probe's filters = 8 * num_heads
        with pytest.raises(ValueError, match=rf"`num_heads` must be .*num_heads={heads!r}"):
            swap_convolutions(resnet50, num_heads=heads)
