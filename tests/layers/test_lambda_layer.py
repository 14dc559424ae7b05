"""LambdaLayer against the naive NumPy reference, its properties and saving (its argument
checks: test_lambda_checks.py; masked contexts: test_masking.py)."""

import keras
import numpy as np
import pytest

from lambda_keras.layers import LambdaLayer, RelativePositionEmbedding
from lambda_keras.layers import lambda_layer as lambda_layer_module
from tests.backend import gradients, numpy
from tests.layers.lambda_helpers import (
    MASK_20,
    assert_matches,
    build_layer,
    randomize_batch_norms,
    reference_for,
)

IMPLEMENTATIONS = ["einsum", "conv", "depthwise"]
RNG = np.random.default_rng(1)

# Case name -> layer kwargs; the images are 4x5 (non-square), 20 positions.
CASES = {
    "global": dict(scope_size=None),
    "local": dict(scope_size=3),
    "local_nonsquare": dict(scope_size=(3, 5)),
    "local_larger_than_map": dict(scope_size=11),
    "causal": dict(scope_size=3, causal=True),
    "causal_global": dict(scope_size=None, causal=True),
    "masked": dict(scope_size=None, context_mask=MASK_20),
    "masked_local": dict(scope_size=3, context_mask=MASK_20),
    "intra_depth": dict(scope_size=3, intra_depth=3),
    "intra_depth_global": dict(scope_size=None, intra_depth=2),
    "multi_head": dict(scope_size=3, multi_head=True),
    "multi_head_global_causal": dict(scope_size=None, multi_head=True, causal=True),
}


def _defined(impl, kwargs):
    """Combinations the paper defines (the others raise, see the error tests)."""
    if impl == "depthwise" and kwargs.get("intra_depth", 1) > 1:
        return False
    if impl != "einsum" and kwargs.get("context_mask") is not None:
        return False
    return True


COMBINATIONS = [
    pytest.param(impl, case, id=f"{impl}-{case}")
    for case, kwargs in CASES.items()
    for impl in IMPLEMENTATIONS
    if _defined(impl, kwargs)
]


@pytest.mark.parametrize("impl,case", COMBINATIONS)
def test_matches_naive_reference_on_images(impl, case):
    x = RNG.normal(size=(2, 4, 5, 8)).astype("float32")
    layer = build_layer(x, implementation=impl, **CASES[case])
    y = numpy(layer(x, training=False))
    assert y.shape == (2, 4, 5, 12)
    assert_matches(y, reference_for(layer, x))


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
@pytest.mark.parametrize("scope", [23, None])
def test_paper_defaults_match_reference(impl, scope):
    """|k|=16, |h|=4, |u|=1 on a 7x7 map (c5 at 224px) with d=64."""
    x = RNG.normal(size=(2, 7, 7, 64)).astype("float32")
    layer = LambdaLayer(scope_size=scope, implementation=impl)
    layer.build(x.shape)
    randomize_batch_norms(layer, np.random.default_rng(4))
    assert_matches(numpy(layer(x, training=False)), reference_for(layer, x))


POSITION_BIAS_CASES = {
    "local": dict(scope_size=3),
    "global": dict(scope_size=None),
    "multi_head_intra_depth": dict(scope_size=3, multi_head=True, intra_depth=2),
    "causal": dict(scope_size=3, causal=True),
}


@pytest.mark.parametrize(
    "impl,case",
    [
        pytest.param(impl, case, id=f"{impl}-{case}")
        for case, kwargs in POSITION_BIAS_CASES.items()
        for impl in IMPLEMENTATIONS
        if _defined(impl, kwargs)
    ],
)
def test_position_bias_matches_reference(impl, case):
    """timm's lambda-convolution bias: a per-key constant in every position lambda."""
    x = RNG.normal(size=(2, 4, 5, 8)).astype("float32")
    layer = build_layer(x, implementation=impl, use_position_bias=True, **POSITION_BIAS_CASES[case])
    assert layer.position_bias.shape == (layer.groups, layer.key_dim)
    without = numpy(layer(x, training=False))
    layer.position_bias.assign(RNG.normal(size=layer.position_bias.shape))
    y = numpy(layer(x, training=False))
    assert np.abs(y - without).max() > 0.1  # the bias changes the output...
    assert_matches(y, reference_for(layer, x))  # ...as the reference says


def test_position_bias_is_off_by_default_and_needs_position_lambdas():
    layer = LambdaLayer(8, key_dim=4, num_heads=2, scope_size=3)
    layer.build((None, 4, 4, 8))
    assert layer.position_bias is None
    assert "position_bias" not in [w.path.split("/")[-1] for w in layer.weights]
    with pytest.raises(ValueError, match="use_position_bias=True.*position=False"):
        LambdaLayer(8, position=False, use_position_bias=True)


SEQUENCE_CASES = {
    "local": dict(scope_size=5),
    "global": dict(scope_size=None),
    "causal": dict(scope_size=5, causal=True),
    "intra_depth": dict(scope_size=3, intra_depth=2),
    "multi_head": dict(scope_size=5, multi_head=True),
}


@pytest.mark.parametrize(
    "impl,case",
    [
        pytest.param(impl, case, id=f"{impl}-{case}")
        for case, kwargs in SEQUENCE_CASES.items()
        for impl in IMPLEMENTATIONS
        if _defined(impl, kwargs)
    ],
)
def test_matches_naive_reference_on_sequences(impl, case):
    x = RNG.normal(size=(2, 9, 8)).astype("float32")
    layer = build_layer(x, implementation=impl, **SEQUENCE_CASES[case])
    y = numpy(layer(x, training=False))
    assert y.shape == (2, 9, 12)
    assert_matches(y, reference_for(layer, x))


ABLATIONS = {
    "content_only": dict(position=False),  # linear attention, multi-query (Table 9)
    "position_only": dict(content=False),  # Table 9
    "l2_keys": dict(key_normalization="l2"),  # Table 11
    "unnormalized_keys": dict(key_normalization="none"),  # Table 11
    "softmax_queries": dict(query_normalization="softmax"),  # Table 11
    "no_batch_norm": dict(query_batch_norm=False, value_batch_norm=False),  # Table 11
    "masked_l2_keys": dict(key_normalization="l2", causal=True),
    "masked_unnormalized_keys": dict(key_normalization="none", causal=True),
    "masked_content_only": dict(position=False, context_mask=MASK_20),
}


@pytest.mark.parametrize("case", list(ABLATIONS))
def test_ablations_match_reference(case):
    x = RNG.normal(size=(2, 4, 5, 8)).astype("float32")
    layer = build_layer(x, scope_size=3, **ABLATIONS[case])
    assert_matches(numpy(layer(x, training=False)), reference_for(layer, x))


@pytest.mark.parametrize(
    "shape,scope", [((2, 14, 14, 32), 7), ((2, 14, 14, 32), 23), ((2, 7, 9, 32), None)]
)
def test_implementations_agree_at_paper_shapes(shape, scope):
    x = RNG.normal(size=shape).astype("float32")
    outputs = {}
    weights = None
    for impl in IMPLEMENTATIONS:
        layer = LambdaLayer(64, scope_size=scope, implementation=impl)
        layer.build(x.shape)
        if weights is None:
            weights = layer.get_weights()
        layer.set_weights(weights)
        outputs[impl] = numpy(layer(x))
    scale = np.abs(outputs["einsum"]).max()
    for impl in ("conv", "depthwise"):
        np.testing.assert_allclose(outputs[impl] / scale, outputs["einsum"] / scale, atol=1e-5)


def test_output_channels_differ_from_input_channels_and_default():
    x = RNG.normal(size=(1, 6, 6, 16)).astype("float32")
    assert LambdaLayer(40, num_heads=4)(x).shape == (1, 6, 6, 40)
    assert LambdaLayer()(x).shape == (1, 6, 6, 16)


def test_defaults_follow_the_paper():
    layer = LambdaLayer()
    assert (layer.key_dim, layer.num_heads, layer.intra_depth, layer.scope_size) == (16, 4, 1, 23)
    assert layer.key_normalization == "softmax" and not layer.multi_head
    assert layer.query_batch_norm and layer.value_batch_norm


def test_initialisation_follows_appendix_f2():
    d, k, h = 256, 16, 4
    layer = LambdaLayer(256, key_dim=k, num_heads=h)
    layer.build((None, 14, 14, d))
    kernel = layer.qkv_kernel.numpy()
    queries, keys_values = kernel[:, : h * k], kernel[:, h * k :]
    np.testing.assert_allclose(queries.std(), (k * d) ** -0.5, rtol=0.05)
    np.testing.assert_allclose(keys_values.std(), d**-0.5, rtol=0.05)
    embeddings = layer.position_embedding.embeddings.numpy()
    np.testing.assert_allclose(embeddings.std(), 1.0, rtol=0.05)
    assert abs(embeddings.mean()) < 0.05


# Directional derivatives of the float64 NumPy reference (central differences) against the
# backend's float32 gradients, for the inputs, the projections and the embeddings.
GRADIENT_CASES = {
    "global_causal": dict(scope_size=None, causal=True),
    "local_intra_depth": dict(scope_size=3, intra_depth=2),
    "local": dict(scope_size=3),
    "masked": dict(scope_size=None, context_mask=MASK_20[:12, :12]),
    "multi_head_bias": dict(scope_size=3, multi_head=True, use_position_bias=True),
}


@pytest.mark.parametrize(
    "impl,case",
    [
        pytest.param(impl, case, id=f"{impl}-{case}")
        for case, kwargs in GRADIENT_CASES.items()
        for impl in IMPLEMENTATIONS
        if _defined(impl, kwargs)
    ],
)
def test_gradients_match_the_reference(impl, case):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 3, 4, 4)).astype("float32")
    layer = build_layer(
        x, dim_out=4, key_dim=2, num_heads=2, implementation=impl, **GRADIENT_CASES[case]
    )
    if layer.position_bias is not None:
        layer.position_bias.assign(rng.normal(size=layer.position_bias.shape))
    weight = rng.normal(size=(2, 3, 4, 4))
    inputs = keras.Variable(x)
    variables = [inputs, layer.qkv_kernel, layer.position_embedding.embeddings]

    def loss():
        return keras.ops.sum(
            layer(inputs, training=False) * keras.ops.convert_to_tensor(weight, "float32")
        )

    grads = gradients(loss, variables)
    values = [numpy(v).astype("float64") for v in variables]

    def reference_loss(x_, kernel, embeddings):
        y = reference_for(layer, x_, qkv_kernel=kernel, embeddings=embeddings)
        return float((y * weight).sum())

    for index, grad in enumerate(grads):
        direction = rng.normal(size=values[index].shape)
        step = 1e-4
        plus, minus = list(values), list(values)
        plus[index] = values[index] + step * direction
        minus[index] = values[index] - step * direction
        numerical = (reference_loss(*plus) - reference_loss(*minus)) / (2 * step)
        analytic = float((grad.astype("float64") * direction).sum())
        scale = max(1.0, float(np.abs(grad).sum() * np.abs(direction).max()))
        assert abs(analytic - numerical) <= 1e-5 * scale, (index, analytic, numerical)
        assert np.isfinite(grad).all() and np.abs(grad).sum() > 0


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_position_only_local_layer_is_translation_equivariant(impl):
    scope, shift = 5, (2, 3)
    x = RNG.normal(size=(1, 16, 16, 8)).astype("float32")
    layer = LambdaLayer(
        8, key_dim=4, num_heads=2, scope_size=scope, content=False, implementation=impl
    )
    y = numpy(layer(x))
    y_shifted = numpy(layer(np.roll(x, shift, axis=(1, 2))))
    # Away from the borders, the output of the shifted input is the shifted output.
    lo = scope // 2 + max(shift)
    hi = 16 - scope // 2 - max(shift)
    expected = np.roll(y, shift, axis=(1, 2))[:, lo:hi, lo:hi]
    np.testing.assert_allclose(y_shifted[:, lo:hi, lo:hi], expected, rtol=1e-5, atol=1e-5)
    assert not np.allclose(y_shifted, y, atol=1e-3)  # it does depend on the input's position


@pytest.mark.parametrize("impl, spreads", [("einsum", True), ("conv", False), ("depthwise", False)])
@pytest.mark.parametrize("content", [False, True])
def test_where_a_nan_input_reaches(impl, spreads, content):
    """What the docstring says of a NaN input: the content lambda carries it to every output;
    without it, einsum's dense embeddings still do, the convolutions only inside the scope."""
    x = RNG.normal(size=(1, 16, 16, 8)).astype("float32")
    x[0, 0, 0, 0] = np.nan
    layer = LambdaLayer(
        8, key_dim=4, num_heads=2, scope_size=3, content=content, implementation=impl
    )
    y = numpy(layer(x))
    assert np.isnan(y[0, :2, :2]).all()  # the scope around the NaN
    assert np.isnan(y[0, 8:, 8:]).all() == (content or spreads)
    assert np.isfinite(y[0, 8:, 8:]).all() == (not (content or spreads))


@pytest.mark.parametrize("impl", ["conv", "depthwise", "einsum"])
def test_variable_spatial_size(impl):
    inputs = keras.Input((None, None, 8))
    model = keras.Model(
        inputs, LambdaLayer(8, key_dim=4, num_heads=2, scope_size=5, implementation=impl)(inputs)
    )
    for shape in ((1, 6, 9, 8), (2, 11, 4, 8)):
        assert model(RNG.normal(size=shape).astype("float32")).shape == shape[:-1] + (8,)


def test_global_einsum_accepts_maps_up_to_max_size():
    layer = LambdaLayer(
        8, key_dim=4, num_heads=2, scope_size=None, max_size=(6, 7), implementation="einsum"
    )
    inputs = keras.Input((None, None, 8))
    model = keras.Model(inputs, layer(inputs))
    assert layer.position_embedding.size == (11, 13)
    for shape in ((1, 6, 7, 8), (1, 3, 2, 8)):
        x = RNG.normal(size=shape).astype("float32")
        assert_matches(numpy(model(x)), reference_for(layer, x))
    with pytest.raises(ValueError, match="max_size"):
        model(RNG.normal(size=(1, 7, 7, 8)).astype("float32"))


@pytest.mark.tensorflow
def test_global_range_is_checked_when_a_graph_of_unknown_shape_runs():
    import tensorflow as tf

    layer = LambdaLayer(
        8, key_dim=4, num_heads=2, scope_size=None, max_size=(6, 7), implementation="einsum"
    )
    inputs = keras.Input((None, None, 8))
    model = keras.Model(inputs, layer(inputs))
    serve = tf.function(model, input_signature=[tf.TensorSpec((None, None, None, 8))])
    assert serve(RNG.normal(size=(1, 6, 3, 8)).astype("float32")).shape == (1, 6, 3, 8)
    with pytest.raises(tf.errors.InvalidArgumentError, match="max_size"):
        serve(RNG.normal(size=(1, 8, 3, 8)).astype("float32"))


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_compiled_predict_matches_reference(impl):
    """Inside the backend's compiled function (``tf.function``, ``jax.jit``) too."""
    x = RNG.normal(size=(3, 4, 5, 8)).astype("float32")
    cases = [CASES["local_nonsquare"], CASES["causal"]]
    if impl == "einsum":
        cases.append(CASES["masked"])
    for kwargs in cases:
        layer = build_layer(x, implementation=impl, **kwargs)
        inputs = keras.Input(x.shape[1:])
        model = keras.Model(inputs, layer(inputs))
        assert_matches(model.predict(x, batch_size=2, verbose=0), reference_for(layer, x))


# ---------------------------------------------------------------- shared embeddings
def shared_model():
    embedding = RelativePositionEmbedding(size=5, key_dim=4)
    inputs = keras.Input((6, 6, 8), name="images")
    x = LambdaLayer(8, key_dim=4, num_heads=2, scope_size=5, position_embedding=embedding)(inputs)
    x = keras.layers.ReLU()(x)
    x = LambdaLayer(
        16,
        key_dim=4,
        num_heads=4,
        scope_size=5,
        position_embedding=embedding,
        implementation="conv",
    )(x)
    return keras.Model(inputs, x), embedding


def test_shared_position_embeddings_are_one_set_of_weights():
    model, embedding = shared_model()
    first, second = model.layers[1], model.layers[3]
    assert first.position_embedding is second.position_embedding is embedding
    embedding_weights = [w for w in model.weights if w.name == "embeddings"]
    assert len(embedding_weights) == 1
    unshared = LambdaLayer(8, key_dim=4, num_heads=2, scope_size=5)
    unshared.build((None, 6, 6, 8))
    assert model.count_params() < 2 * unshared.count_params() + 10_000
    # Training moves the one embedding, seen by both layers.
    before = embedding.embeddings.numpy().copy()
    model.compile(optimizer="sgd", loss="mse")
    model.fit(RNG.normal(size=(4, 6, 6, 8)), RNG.normal(size=(4, 6, 6, 16)), epochs=1, verbose=0)
    assert not np.allclose(embedding.embeddings.numpy(), before)


def test_shared_embeddings_stay_shared_after_keras_round_trip(tmp_path):
    model, _ = shared_model()
    path = str(tmp_path / "shared.keras")
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    first, second = loaded.layers[1], loaded.layers[3]
    assert first.position_embedding is second.position_embedding
    x = RNG.normal(size=(2, 6, 6, 8)).astype("float32")
    np.testing.assert_allclose(numpy(loaded(x)), numpy(model(x)), rtol=1e-6, atol=1e-6)


def test_shared_embedding_must_match_the_layer():
    embedding = RelativePositionEmbedding(size=5, key_dim=4)
    with pytest.raises(ValueError, match="key_dim=4"):
        LambdaLayer(8, key_dim=8, position_embedding=embedding, scope_size=5)
    with pytest.raises(ValueError, match="scope_size"):
        LambdaLayer(8, key_dim=4, position_embedding=embedding, scope_size=7)
    with pytest.raises(ValueError, match="groups"):
        LambdaLayer(
            8, key_dim=4, num_heads=2, multi_head=True, position_embedding=embedding, scope_size=5
        )
    with pytest.raises(TypeError, match="RelativePositionEmbedding"):
        LambdaLayer(8, position_embedding=keras.layers.Dense(3))


# ---------------------------------------------------------------- saving
@pytest.mark.parametrize(
    "kwargs",
    [
        dict(scope_size=5, implementation="conv"),
        dict(scope_size=None, causal=True, intra_depth=2),
        dict(scope_size=3, context_mask=np.tril(np.ones((36, 36), bool)), multi_head=True),
        dict(scope_size=5, use_position_bias=True),
    ],
    ids=["conv", "global-causal-u2", "masked-multihead", "position-bias"],
)
def test_keras_file_round_trip_is_identical(tmp_path, kwargs):
    inputs = keras.Input((6, 6, 8), name="images")
    layer = LambdaLayer(
        12, key_dim=4, num_heads=3, kernel_regularizer=keras.regularizers.L2(1e-4), **kwargs
    )
    model = keras.Model(inputs, layer(inputs))
    randomize_batch_norms(layer, np.random.default_rng(2))
    if layer.position_bias is not None:
        layer.position_bias.assign(RNG.normal(size=layer.position_bias.shape))
    path = str(tmp_path / "model.keras")
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    x = RNG.normal(size=(2, 6, 6, 8)).astype("float32")
    np.testing.assert_array_equal(numpy(loaded(x)), numpy(model(x)))
    config = loaded.layers[1].get_config()
    for key in ("key_dim", "num_heads", "scope_size", "causal", "intra_depth", "multi_head"):
        assert config[key] == layer.get_config()[key]


def test_get_config_round_trip():
    layer = LambdaLayer(
        24,
        key_dim=8,
        num_heads=2,
        intra_depth=2,
        scope_size=(3, 5),
        implementation="conv",
        key_normalization="l2",
        query_normalization="softmax",
        value_batch_norm=False,
        batch_norm_momentum=0.9,
        batch_norm_epsilon=1e-5,
        use_bias=True,
        use_position_bias=True,
        name="lam",
    )
    clone = LambdaLayer.from_config(layer.get_config())
    assert clone.get_config() == layer.get_config()
    global_layer = LambdaLayer(8, scope_size=None, max_size=9)
    assert LambdaLayer.from_config(global_layer.get_config()).max_size == 9


@pytest.mark.tensorflow
def test_saved_model_export_signature_matches(tmp_path):
    import tensorflow as tf

    inputs = keras.Input((8, 8, 16), name="images")
    x = LambdaLayer(16, key_dim=8, num_heads=2, scope_size=5)(inputs)
    model = keras.Model(inputs, keras.layers.GlobalAveragePooling2D()(x))
    path = str(tmp_path / "export")
    model.export(path, format="tf_saved_model", verbose=False)
    restored = tf.saved_model.load(path)
    serve = restored.signatures["serving_default"]
    assert "images" in serve.structured_input_signature[1]
    x = RNG.normal(size=(3, 8, 8, 16)).astype("float32")
    (out,) = serve(images=tf.constant(x)).values()
    np.testing.assert_allclose(out.numpy(), numpy(model(x)), rtol=1e-5, atol=1e-6)


@pytest.mark.tensorflow
@pytest.mark.parametrize("impl", ["conv", "einsum"])
def test_saved_model_with_variable_image_size(tmp_path, impl):
    import tensorflow as tf

    inputs = keras.Input((None, None, 8), name="images")
    outputs = LambdaLayer(8, key_dim=4, num_heads=2, scope_size=5, implementation=impl)(inputs)
    model = keras.Model(inputs, outputs)
    model.export(str(tmp_path / "export"), format="tf_saved_model", verbose=False)
    serve = tf.saved_model.load(str(tmp_path / "export")).signatures["serving_default"]
    for shape in ((1, 5, 9, 8), (2, 12, 7, 8)):
        x = RNG.normal(size=shape).astype("float32")
        (out,) = serve(images=tf.constant(x)).values()
        np.testing.assert_allclose(out.numpy(), numpy(model(x)), rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- mixed precision
@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_mixed_precision_is_finite_for_large_inputs(policy, impl):
    x32 = (1e3 * np.random.default_rng(5).uniform(-1, 1, size=(2, 8, 8, 32))).astype("float32")
    keras.config.set_dtype_policy(policy)
    layer = LambdaLayer(32, key_dim=16, num_heads=4, scope_size=7, implementation=impl)
    assert layer.compute_dtype in ("float16", "bfloat16")
    y = layer(x32, training=True)
    assert keras.backend.standardize_dtype(y.dtype) == layer.compute_dtype
    assert np.isfinite(numpy(y).astype("float32")).all()

    def loss():
        return keras.ops.mean(keras.ops.cast(layer(x32, training=True), "float32") ** 2)

    grads = gradients(loss, layer.trainable_variables)
    assert all(np.isfinite(g.astype("float32")).all() for g in grads)
    # The same weights in float32 give nearly the same result.
    keras.config.set_dtype_policy("float32")
    ref_layer = LambdaLayer(32, key_dim=16, num_heads=4, scope_size=7, implementation=impl)
    ref_layer.build(x32.shape)
    ref_layer.set_weights(layer.get_weights())
    ref = numpy(ref_layer(x32, training=True))
    err = np.linalg.norm(numpy(y).astype("float32") - ref) / np.linalg.norm(ref)
    # bfloat16 keeps 8 bits of mantissa: keys of magnitude ~1e3 move by units, which the key
    # softmax amplifies; float16 keeps 11.
    assert err < (3e-2 if policy == "mixed_bfloat16" else 3e-3)


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_mixed_precision_inference_with_large_inputs_is_finite(policy):
    """Inference with batch-norm statistics that match the data (as after training).

    The keys are not normalised, so they keep the inputs' ~1e3 scale: a key softmax in 16 bits
    would overflow. (A *freshly initialised* layer in inference mode does not normalise queries
    and values either, and its outputs, ~1e7 here, cannot be represented in float16 at all.)
    """
    keras.config.set_dtype_policy(policy)
    x = (1e3 * RNG.uniform(-1, 1, size=(2, 8, 8, 32))).astype("float32")
    for kwargs in (dict(scope_size=None, causal=True), dict(scope_size=7), dict(intra_depth=2)):
        layer = LambdaLayer(32, batch_norm_momentum=0.0, **kwargs)
        layer(x, training=True)  # momentum 0: the moving statistics become this batch's
        y = numpy(layer(x, training=False)).astype("float32")
        assert np.isfinite(y).all()
        assert np.abs(y).max() > 1.0


@pytest.mark.parametrize("kwargs", [dict(scope_size=None), dict(scope_size=3, causal=True)])
def test_einsum_in_chunks_of_queries_matches_reference(monkeypatch, kwargs):
    monkeypatch.setattr(lambda_layer_module, "EINSUM_CHUNK_ELEMENTS", 7 * 20 * 4)  # 7 rows
    x = RNG.normal(size=(2, 4, 5, 8)).astype("float32")
    layer = build_layer(x, implementation="einsum", **kwargs)
    assert_matches(numpy(layer(x, training=False)), reference_for(layer, x))
