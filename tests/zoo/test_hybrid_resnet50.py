"""The vanilla ResNet-50 placement study."""

import keras
import numpy as np
import pytest

from lambda_keras.layers import LambdaLayer
from lambda_keras.zoo import ResNet50


def lambda_stages(model):
    return sorted({lay.name[:2] for lay in model.layers if isinstance(lay, LambdaLayer)})


@pytest.mark.parametrize(
    "layout,stages", [("CCCC", []), ("LLLL", ["c2", "c3", "c4", "c5"]), ("ccll", ["c4", "c5"])]
)
def test_layout_selects_the_stages(layout, stages):
    model = ResNet50(layout=layout, input_shape=(64, 64, 3), classes=3)
    assert lambda_stages(model) == stages
    assert model.output.shape == (None, 3)


def test_vanilla_resnet50_matches_keras_applications_trainable_parameters():
    """Same layer shapes as keras.applications.ResNet50 except the conv biases Keras keeps."""
    ours = ResNet50(input_shape=(64, 64, 3))
    reference = keras.applications.ResNet50(weights=None, input_shape=(64, 64, 3))
    biases = sum(
        int(np.prod(lay.bias.shape))
        for lay in reference.layers
        if isinstance(lay, keras.layers.Conv2D) and lay.use_bias
    )
    ours_count = sum(int(np.prod(w.shape)) for w in ours.trainable_weights)
    ref_count = sum(int(np.prod(w.shape)) for w in reference.trainable_weights)
    assert ours_count == ref_count - biases
    assert isinstance(ours.get_layer("stem_pool"), keras.layers.MaxPooling2D)
    assert ours.get_layer("c3_block1_2_conv").strides == (2, 2)  # stride on the 3x3


def test_intra_depth_variant_uses_a_7x7_scope():
    model = ResNet50(layout="LLLL", intra_depth=4, input_shape=(64, 64, 3))
    layer = model.get_layer("c4_block1_2_lambda")
    assert (layer.intra_depth, layer.scope_size) == (4, 7)
    assert (
        ResNet50(layout="LLLL", input_shape=(64, 64, 3)).get_layer("c4_block1_2_lambda").scope_size
        == 23
    )


def test_forward_pass():
    model = ResNet50(layout="CCLL", input_shape=(64, 64, 3), include_top=False, pooling="avg")
    assert model(np.zeros((2, 64, 64, 3), "float32")).shape == (2, 2048)


@pytest.mark.parametrize("layout", ["CCL", "CCXL", 4, "CCLLL"])
def test_bad_layout(layout):
    with pytest.raises(ValueError, match="layout"):
        ResNet50(layout=layout)
