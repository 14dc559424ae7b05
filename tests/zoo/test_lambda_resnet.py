"""LambdaResNets and ResNet-RS baselines: structure, shapes, arguments, saving."""

import keras
import numpy as np
import pytest

from lambda_keras import zoo
from lambda_keras.layers import LambdaLayer, StochasticDepth
from lambda_keras.zoo import lambda_resnet, resnet_rs
from tests.backend import computes_float64, numpy

SMALL = (64, 64, 3)
# The paper's Table 19, transcribed: block configuration and the c4 blocks with lambda layers.
TABLE19 = {
    50: ((3, 4, 6, 3), (3,)),
    101: ((3, 4, 23, 3), (6, 12, 18)),
    152: ((3, 8, 36, 3), (5, 10, 15, 20, 25, 30)),
    200: ((3, 24, 36, 3), (5, 10, 15, 20, 25, 30)),
    270: ((4, 29, 53, 4), (8, 16, 24, 32, 40, 48)),
    350: ((4, 36, 72, 4), (10, 20, 30, 40, 50, 60)),
    420: ((4, 44, 87, 4), (10, 20, 30, 40, 50, 60, 70, 80)),
}


def lambda_blocks(model):
    """{stage: sorted 1-indexed blocks} of the lambda layers, from the layer names."""
    found = {}
    for layer in model.layers:
        if isinstance(layer, LambdaLayer):
            stage, block = layer.name.split("_")[:2]  # c4_block6_2_lambda
            found.setdefault(stage, []).append(int(block.removeprefix("block")))
    return {stage: sorted(blocks) for stage, blocks in found.items()}


def se_blocks(model):
    return {
        layer.name.rsplit("_se_", 1)[0]
        for layer in model.layers
        if layer.name.endswith("_se_excite")
    }


def test_the_spec_table_is_table_19():
    assert {d: (r.blocks, r.c4_lambda_blocks) for d, r in resnet_rs.DEPTHS.items()} == TABLE19


# The built placement at the shallowest and the paper's main depth in the quick tier, at the
# deepest in the end-to-end tier; every depth under -m slow (the spec table of every depth is
# Table 19: test_the_spec_table_is_table_19).
QUICK_DEPTHS = (50, 101)
DEEPEST = 420


def tier(depth: int):
    """``depth`` as a parameter of the tier that builds it."""
    if depth in QUICK_DEPTHS:
        return depth
    return pytest.param(
        depth, marks=pytest.mark.end_to_end if depth == DEEPEST else pytest.mark.slow
    )


@pytest.mark.parametrize("depth", [tier(d) for d in sorted(TABLE19)])
def test_lambda_layers_at_table_19_positions(depth):
    blocks, c4_lambda_blocks = TABLE19[depth]
    model = getattr(zoo, f"LambdaResNet{depth}")(input_shape=SMALL, classes=10)
    assert lambda_blocks(model) == {
        "c4": list(c4_lambda_blocks),
        "c5": list(range(1, blocks[3] + 1)),
    }
    # SE in the stages without lambda layers only (c2, c3), never in a lambda block.
    expected_se = {f"c{s}_block{b}" for s in (2, 3) for b in range(1, blocks[s - 2] + 1)}
    assert se_blocks(model) == expected_se
    assert model.output.shape == (None, 10)


@pytest.mark.parametrize("depth", [tier(d) for d in (*QUICK_DEPTHS, DEEPEST)])
def test_c4_variant_uses_lambda_layers_in_all_of_c4_and_c5(depth):
    blocks = TABLE19[depth][0]
    model = getattr(zoo, f"LambdaResNet{depth}C4")(input_shape=SMALL, include_top=False)
    assert lambda_blocks(model) == {
        "c4": list(range(1, blocks[2] + 1)),
        "c5": list(range(1, blocks[3] + 1)),
    }
    assert model.output.shape == (None, 2, 2, 2048)


@pytest.mark.parametrize("depth", [50, pytest.param(200, marks=pytest.mark.slow)])
def test_resnet_rs_with_and_without_se(depth):
    with_se = getattr(zoo, f"ResNetRS{depth}")(input_shape=SMALL)
    without = getattr(zoo, f"ResNetRS{depth}")(input_shape=SMALL, se=False)
    assert len(se_blocks(with_se)) == sum(TABLE19[depth][0])
    assert not se_blocks(without) and not lambda_blocks(with_se)
    assert without.name == f"resnet_rs{depth}_nose"
    assert with_se.count_params() > without.count_params()


def test_resnet_rs_stem_shortcuts_and_initialisation():
    model = zoo.ResNetRS50(input_shape=SMALL, se=False)
    names = {layer.name for layer in model.layers}
    assert {"stem_1_conv", "stem_4_conv"} <= names and "stem_pool" not in names
    assert model.get_layer("stem_1_conv").strides == (2, 2)
    assert model.get_layer("stem_4_conv").kernel_size == (3, 3)
    assert model.get_layer("stem_4_conv").strides == (2, 2)
    assert isinstance(model.get_layer("c3_block1_shortcut_pool"), keras.layers.AveragePooling2D)
    assert np.all(model.get_layer("c3_block1_3_bn").gamma.numpy() == 0)


def test_lambda_block_downsamples_with_average_pool_after_the_lambda():
    model = zoo.LambdaResNet50C4(input_shape=SMALL)
    pool = model.get_layer("c4_block1_2_pool")
    assert isinstance(pool, keras.layers.AveragePooling2D)
    assert pool.pool_size == (3, 3) and pool.strides == (2, 2)
    assert model.get_layer("c4_block1_2_lambda").output.shape[1:3] == (8, 8)
    assert pool.output.shape[1:3] == (4, 4)


def test_regularization_defaults_follow_table_20():
    model = zoo.LambdaResNet350(input_shape=SMALL)
    assert model.get_layer("top_dropout").rate == 0.3
    rates = {lay.name: lay.rate for lay in model.layers if isinstance(lay, StochasticDepth)}
    assert rates["c5_block1_drop"] == pytest.approx(0.2)
    assert rates["c2_block1_drop"] == pytest.approx(0.2 * 2 / 5)
    assert not any(
        isinstance(lay, StochasticDepth) for lay in zoo.LambdaResNet50(input_shape=SMALL).layers
    )


def test_lambda_hyper_parameters_reach_the_layers():
    model = zoo.LambdaResNet50C4(
        input_shape=SMALL, key_dim=8, num_heads=2, scope_size=7, implementation="conv"
    )
    layer = model.get_layer("c5_block1_2_lambda")
    assert (layer.key_dim, layer.num_heads, layer.scope_size, layer.implementation) == (
        8,
        2,
        7,
        "conv",
    )


def test_forward_pass_include_top_and_pooling():
    x = np.random.default_rng(0).uniform(0, 255, size=(2, *SMALL)).astype("float32")
    x = lambda_resnet.preprocess_input(x)
    model = zoo.LambdaResNet50(input_shape=SMALL, classes=7)
    probs = numpy(model(x))
    assert probs.shape == (2, 7)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-5)
    for pooling, shape in ((None, (2, 2, 2, 2048)), ("avg", (2, 2048)), ("max", (2, 2048))):
        features = zoo.LambdaResNet50(input_shape=SMALL, include_top=False, pooling=pooling)
        assert features(x).shape == shape


def test_input_tensor_and_variable_input_size():
    inputs = keras.Input((96, 80, 3))
    model = zoo.LambdaResNet50C4(input_tensor=inputs, include_top=False, pooling="avg")
    assert model.input is inputs and model.output.shape == (None, 2048)
    model = zoo.ResNetRS50(input_shape=(None, None, 3), include_top=False, pooling="avg")
    assert model(np.zeros((1, 64, 96, 3), "float32")).shape == (1, 2048)


def test_preprocess_input_normalises_with_imagenet_statistics():
    x = np.full((1, 2, 2, 3), 255.0, "float32")
    out = np.asarray(lambda_resnet.preprocess_input(x))
    np.testing.assert_allclose(
        out[0, 0, 0],
        (1 - np.array([0.485, 0.456, 0.406])) / np.array([0.229, 0.224, 0.225]),
        rtol=1e-5,
    )


@pytest.mark.end_to_end  # a SavedModel written and served
def test_saved_model_export(tmp_path):
    if keras.backend.backend() == "torch":
        pytest.skip(
            "Keras 3.15's tf_saved_model export fails on PyTorch for any model (torch.export: "
            "dynamic_shapes mismatch); lambda_keras.zoo.serving exports through a .keras file"
        )
    tf = pytest.importorskip("tensorflow", reason="a SavedModel needs TensorFlow installed")
    model = zoo.LambdaResNet50C4(input_shape=SMALL, classes=5)
    x = np.random.default_rng(1).normal(size=(2, *SMALL)).astype("float32")
    expected = numpy(model(x))
    model.export(str(tmp_path / "serving"), format="tf_saved_model", verbose=False)
    serve = tf.saved_model.load(str(tmp_path / "serving")).signatures["serving_default"]
    (out,) = serve(images=tf.constant(x)).values()
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        (dict(pooling="mean"), ValueError, "pooling"),
        (dict(classes=0), ValueError, "classes"),
        (dict(input_shape=(16, 16, 3)), ValueError, "at least 32x32"),
        (dict(input_shape=(64, 64)), ValueError, "input_shape"),
        (dict(weights="imagenet"), ValueError, "Unknown weights 'imagenet'"),
        (dict(weights="missing/file.weights.h5"), ValueError, "does not exist"),
        (dict(input_tensor=np.zeros((1, 64, 64, 3))), TypeError, "input_tensor"),
        (dict(implementation="fast"), ValueError, "implementation"),
        (dict(se_in_lambda_stages="no"), TypeError, "`se_in_lambda_stages` must be True or"),
    ],
)
def test_argument_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        zoo.LambdaResNet50(**kwargs)


def test_width_multiplier_scales_the_stages():
    model = zoo.LambdaResNet50C4(input_shape=SMALL, include_top=False, width_multiplier=0.25)
    assert model.output.shape == (None, 2, 2, 512)
    assert model.get_layer("stem_1_conv").filters == 8
    assert model.get_layer("c5_block1_2_lambda").output.shape[-1] == 128
    assert model.count_params() < zoo.LambdaResNet50C4(input_shape=SMALL).count_params() / 10
    with pytest.raises(ValueError, match="width_multiplier"):
        zoo.ResNetRS50(width_multiplier=0)


def test_initialisation_is_per_layer_and_follows_the_seed():
    def kernels(seed):
        keras.utils.set_random_seed(seed)
        model = zoo.ResNetRS50(input_shape=SMALL, classes=10, width_multiplier=0.25, weights=None)
        return {v.path: v.numpy() for v in model.weights if v.path.endswith("conv/kernel")}

    first, again, other = kernels(0), kernels(0), kernels(1)
    # Same-shaped convolutions start from different values...
    a, b = first["c2_block2_1_conv/kernel"], first["c2_block3_1_conv/kernel"]
    assert a.shape == b.shape and not np.array_equal(a, b)
    # ... that keras.utils.set_random_seed fixes.
    assert all(np.array_equal(first[k], again[k]) for k in first)
    assert not np.array_equal(first["stem_1_conv/kernel"], other["stem_1_conv/kernel"])


@pytest.mark.parametrize(
    "policy,output_dtype",
    [("mixed_float16", "float32"), ("mixed_bfloat16", "float32"), ("float64", "float64")],
)
def test_classifier_runs_in_the_variable_dtype(policy, output_dtype):
    if output_dtype == "float64" and not computes_float64():
        pytest.skip("JAX computes float64 as float32 unless jax_enable_x64 is set")
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(policy)
    try:
        model = zoo.LambdaResNet50(input_shape=(32, 32, 3), classes=10, width_multiplier=0.125)
        assert model.get_layer("stem_1_conv").compute_dtype == policy.removeprefix("mixed_")
        probabilities = model(np.zeros((2, 32, 32, 3), "float32"))
        assert keras.backend.standardize_dtype(probabilities.dtype) == output_dtype
        np.testing.assert_allclose(numpy(probabilities).sum(axis=-1), 1.0, rtol=1e-5)
    finally:
        keras.config.set_dtype_policy(previous)
