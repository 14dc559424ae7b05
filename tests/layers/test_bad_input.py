"""Bad arguments and inputs of the layers: a clear error naming the argument, before building."""

import numpy as np
import pytest

from lambda_keras.layers import LambdaConv2D, LambdaLayer, RelativePositionEmbedding

LAYER_CASES = {
    "causal_string": (dict(causal="false"), TypeError, "`causal` must be True or False"),
    "content_int": (dict(content=2), TypeError, "`content` must be True or False"),
    "negative_epsilon": (dict(batch_norm_epsilon=-1e-3), ValueError, "`batch_norm_epsilon`"),
    "zero_epsilon": (dict(batch_norm_epsilon=0.0), ValueError, "`batch_norm_epsilon`"),
    "nan_epsilon": (dict(batch_norm_epsilon=float("nan")), ValueError, "`batch_norm_epsilon`"),
    "string_momentum": (dict(batch_norm_momentum="0.9"), ValueError, "`batch_norm_momentum`"),
    "momentum_one": (dict(batch_norm_momentum=1.0), ValueError, "`batch_norm_momentum`"),
    "negative_momentum": (dict(batch_norm_momentum=-0.1), ValueError, "`batch_norm_momentum`"),
    "even_scope": (dict(scope_size=4), ValueError, "`scope_size` must be None.*4"),
    "float_scope": (dict(scope_size=3.0), ValueError, "`scope_size`"),
    "zero_key_dim": (dict(key_dim=0), ValueError, "`key_dim` must be a positive integer"),
    "float_heads": (dict(num_heads=2.5), ValueError, "`num_heads` must be a positive integer"),
    "bool_heads": (dict(num_heads=True), ValueError, "`num_heads` must be a positive integer"),
    "dim_not_divisible": (dict(dim_out=10, num_heads=4), ValueError, "`dim_out` must be divisible"),
    "implementation": (dict(implementation="fast"), ValueError, "`implementation` must be one of"),
    "depthwise_u2": (dict(implementation="depthwise", intra_depth=2), ValueError, "intra_depth=2"),
    "key_norm": (dict(key_normalization="max"), ValueError, "`key_normalization`"),
    "query_norm": (dict(query_normalization="l2"), ValueError, "`query_normalization`"),
    "mask_not_square": (
        dict(context_mask=np.ones((3, 4))),
        ValueError,
        "`context_mask` must be a square",
    ),
    "mask_values": (dict(context_mask=np.full((3, 3), 2)), ValueError, "`context_mask` must hold"),
    "mask_and_causal": (dict(context_mask=np.ones((3, 3)), causal=True), ValueError, "causal=True"),
    "no_lambdas": (dict(content=False, position=False), ValueError, "`content` and `position`"),
    "bias_without_position": (
        dict(position=False, use_position_bias=True),
        ValueError,
        "use_position_bias",
    ),
}


@pytest.mark.parametrize("case", list(LAYER_CASES))
def test_lambda_layer_arguments(case):
    kwargs, error, message = LAYER_CASES[case]
    with pytest.raises(error, match=message):
        LambdaLayer(**{"dim_out": 8, "key_dim": 4, "num_heads": 2, **kwargs})


@pytest.mark.parametrize(
    "kwargs,name",
    [(dict(scope_size=10001), "scope_size"), (dict(scope_size=None, max_size=9000), "max_size")],
)
def test_absurd_embeddings_are_refused_before_allocation(kwargs, name):
    layer = LambdaLayer(8, key_dim=4, num_heads=2, **kwargs)
    with pytest.raises(ValueError, match=f"`{name}` gives a window of .* GiB"):
        layer.build((None, 8, 8, 8))


def test_called_with_other_channels_than_built():
    layer = LambdaLayer(8, key_dim=4, num_heads=2, scope_size=3)
    layer(np.zeros((1, 4, 4, 8), "float32"))
    with pytest.raises(ValueError, match="built for inputs with 8 channels.*16"):
        layer(np.zeros((1, 4, 4, 16), "float32"))


def test_wrong_rank_and_mask_size():
    with pytest.raises(ValueError, match="rank 3.*or rank 4"):
        LambdaLayer(8, key_dim=4, num_heads=2)(np.zeros((1, 2, 4, 4, 8), "float32"))
    layer = LambdaLayer(8, key_dim=4, num_heads=2, context_mask=np.ones((5, 5)), scope_size=3)
    with pytest.raises(ValueError, match=r"`context_mask` must have shape \[n, n\] = \[16, 16\]"):
        layer(np.zeros((1, 4, 4, 8), "float32"))


def test_global_context_smaller_than_the_map():
    layer = LambdaLayer(8, key_dim=4, num_heads=2, scope_size=None, max_size=4)
    with pytest.raises(ValueError, match="cover maps up to"):
        layer(np.zeros((1, 6, 6, 8), "float32"))


@pytest.mark.parametrize(
    "kwargs,message",
    [
        (dict(size=4), "`size`"),
        (dict(size=5, key_dim=-1), "`key_dim`"),
        (dict(size=5, rank=3), "`rank` must be 1"),
        (dict(size=5, groups=0), "`groups`"),
    ],
)
def test_relative_position_embedding_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        RelativePositionEmbedding(**kwargs)


@pytest.mark.parametrize(
    "kwargs,message",
    [
        (dict(padding="valid"), "`padding` must be 'same'"),
        (dict(strides=(2, 1)), "`strides` must be 1 or 2"),
        (dict(strides=True), "`strides` must be 1 or 2"),
        (dict(strides=2.0), r"`strides` must be 1 or 2, as an int.*received strides=2\.0"),
        (dict(strides=(2.0, 2.0)), r"`strides` must be 1 or 2.*received strides=\(2\.0, 2\.0\)"),
        (dict(strides=np.float32(1)), r"`strides` must be 1 or 2.*received strides="),
        (dict(strides=(2, 2, 2)), r"tuple of 2 equal ints; received strides=\(2, 2, 2\)"),
        (dict(kernel_size=(3, 3, 3)), "`kernel_size`"),
        (dict(filters=-8), "`filters` must be a positive integer"),
        (dict(implementation="conv2d"), "`implementation` must be one of"),
    ],
)
def test_lambda_conv_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        LambdaConv2D(**{"filters": 16, **kwargs})


@pytest.mark.parametrize(
    "kwargs, map_side, message",
    [
        (
            dict(context_mask=np.tril(np.ones((16, 16), bool)), max_size=4),
            3,
            r"LambdaLayer traced_lambda: its context_mask covers maps of 16 positions "
            r"\(shape \[16, 16\]\); received an input map of spatial shape.*\[3 3\]",
        ),
        (
            dict(max_size=4),
            5,
            r"LambdaLayer traced_lambda: the relative embeddings of its global context cover "
            r"maps up to \(4, 4\).*received an input map of spatial shape.*\[5 5\]",
        ),
    ],
    ids=["context_mask", "max_size"],
)
@pytest.mark.tensorflow
def test_a_map_the_traced_layer_does_not_cover_names_the_layer_and_the_map(
    kwargs, map_side, message
):
    """Traced for any map size, then fed a map the mask or embeddings do not cover: the error
    names the layer, what it covers and the map (before: a raw 'Incompatible shapes').

    Every op computed from the map's size waits for the check, so the check's error comes first
    on every run: the graph runs ops in parallel, and a race lost 2 runs in 40 when only the
    input waited. Several runs make a lost race visible here."""
    import keras
    import tensorflow as tf

    layer = LambdaLayer(8, key_dim=4, num_heads=2, scope_size=None, name="traced_lambda", **kwargs)
    inputs = keras.Input((None, None, 8))
    model = keras.Model(inputs, layer(inputs))
    assert model.predict(np.zeros((1, 4, 4, 8), "float32"), verbose=0).shape == (1, 4, 4, 8)
    for _ in range(10):
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            model.predict(np.zeros((1, map_side, map_side, 8), "float32"), verbose=0)
