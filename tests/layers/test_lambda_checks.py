"""LambdaLayer's argument and shape checks (lambda_keras.layers.lambda_checks): each mistake is
a ValueError naming the argument and the value, before any weight is made."""

import numpy as np
import pytest

from lambda_keras.layers import LambdaLayer, RelativePositionEmbedding
from lambda_keras.layers.lambda_checks import check_input_rank, embedding_size


def test_the_input_has_one_or_two_spatial_axes():
    assert check_input_rank((2, 16, 8)) == 1 and check_input_rank((2, 4, 4, 8)) == 2
    with pytest.raises(ValueError, match=r"received input shape \(2, 8\) \(rank 2\)"):
        check_input_rank((2, 8))


@pytest.mark.parametrize(
    "shape", [(1, 0, 8, 16), (1, 8, 0, 16), (1, 8, 8, 0), (1, 0, 16)]
)
@pytest.mark.parametrize("implementation", ["einsum", "conv", "depthwise"])
def test_a_map_without_positions_or_channels_is_refused_by_its_shape(shape, implementation):
    """A side or the channels 0 (the batch may be: an empty one passes): a ValueError naming
    the shape, where the convolutions or the initializers failed deep inside."""
    layer = LambdaLayer(scope_size=3, implementation=implementation)
    expected = rf"at least one position .*received input shape \({', '.join(map(str, shape))}\)"
    with pytest.raises(ValueError, match=expected):
        layer(np.zeros(shape, "float32"))
    built = LambdaLayer(scope_size=3, implementation=implementation)
    good = (1, 4, 4, 16) if len(shape) == 4 else (1, 4, 16)
    built(np.zeros(good, "float32"))
    if shape[-1] == 16:  # the built layer refuses it at the call too
        with pytest.raises(ValueError, match=expected):
            built(np.zeros(shape, "float32"))
    empty = (0, *good[1:])  # an empty batch still passes
    assert tuple(built(np.zeros(empty, "float32")).shape) == empty


def test_the_embeddings_span_the_scope_or_every_offset_of_the_largest_map():
    local = LambdaLayer(8, scope_size=5)
    assert embedding_size(local, (7, 9)) == (5, 5)
    # A global layer: every offset between two positions of the largest map, 2 * side - 1.
    assert embedding_size(LambdaLayer(8, scope_size=None, max_size=6), (4, 4)) == (11, 11)
    assert embedding_size(LambdaLayer(8, scope_size=None), (4, 7)) == (7, 13)
    with pytest.raises(ValueError, match="max_size"):
        embedding_size(LambdaLayer(8, scope_size=None), (None, 7))


def test_error_dim_out_not_divisible_by_heads():
    with pytest.raises(ValueError, match=r"dim_out=10, num_heads=4"):
        LambdaLayer(10, num_heads=4)


def test_error_default_dim_out_not_divisible_by_heads():
    with pytest.raises(ValueError, match=r"dim_out=6, num_heads=4"):
        LambdaLayer(num_heads=4).build((None, 5, 5, 6))


@pytest.mark.parametrize("scope", [4, 0, -3, (3, 4), 2.0])
def test_error_even_or_non_positive_scope(scope):
    with pytest.raises(ValueError, match="scope_size"):
        LambdaLayer(8, scope_size=scope, implementation="conv")


def test_error_unknown_implementation():
    with pytest.raises(ValueError, match=r"implementation.*'einsum', 'conv', 'depthwise'.*'fft'"):
        LambdaLayer(8, implementation="fft")


@pytest.mark.parametrize("shape", [(2, 8), (2, 3, 4, 5, 8)])
def test_error_input_rank(shape):
    with pytest.raises(ValueError, match=r"rank 3.*rank 4"):
        LambdaLayer(8)(np.zeros(shape, "float32"))


def test_error_input_rank_after_build():
    layer = LambdaLayer(8, num_heads=2)
    layer(np.zeros((1, 4, 4, 8), "float32"))
    with pytest.raises(ValueError, match="rank"):
        layer(np.zeros((1, 16, 8), "float32"))


def test_error_mask_shape_mismatch():
    layer = LambdaLayer(8, num_heads=2, scope_size=None, context_mask=np.ones((10, 10), bool))
    with pytest.raises(ValueError, match=r"context_mask.*\[16, 16\]"):
        layer(np.zeros((1, 4, 4, 8), "float32"))


@pytest.mark.parametrize("mask", [np.ones((4, 5)), np.ones(16), np.full((4, 4), 2)])
def test_error_mask_not_square_boolean(mask):
    with pytest.raises(ValueError, match="context_mask"):
        LambdaLayer(8, context_mask=mask)


@pytest.mark.parametrize("impl", ["conv", "depthwise"])
def test_error_mask_with_convolution(impl):
    with pytest.raises(ValueError, match="einsum"):
        LambdaLayer(8, implementation=impl, context_mask=np.ones((4, 4), bool))


def test_error_intra_depth_with_depthwise():
    with pytest.raises(ValueError, match=r"depthwise.*intra_depth=4"):
        LambdaLayer(8, intra_depth=4, implementation="depthwise")


def test_error_global_einsum_on_map_larger_than_embeddings():
    layer = LambdaLayer(8, num_heads=2, scope_size=None, max_size=5, implementation="einsum")
    with pytest.raises(ValueError, match=r"cover maps up to \(5, 5\).*max_size"):
        layer(np.zeros((1, 6, 6, 8), "float32"))
    built = LambdaLayer(8, num_heads=2, scope_size=None, implementation="einsum")
    built(np.zeros((1, 4, 4, 8), "float32"))
    with pytest.raises(ValueError, match="max_size"):
        built(np.zeros((1, 4, 5, 8), "float32"))


def test_error_global_context_without_size():
    with pytest.raises(ValueError, match="max_size"):
        LambdaLayer(8, scope_size=None).build((None, None, None, 8))


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(key_dim=0), "key_dim"),
        (dict(num_heads=-1), "num_heads"),
        (dict(intra_depth=1.5), "intra_depth"),
        (dict(key_normalization="max"), "key_normalization"),
        (dict(query_normalization="l2"), "query_normalization"),
        (dict(content=False, position=False), "content"),
        (dict(scope_size=5, max_size=7), "max_size"),
        (dict(causal=True, context_mask=np.ones((4, 4), bool)), "causal"),
        (
            dict(position=False, position_embedding=RelativePositionEmbedding(5, key_dim=16)),
            "position",
        ),
    ],
)
def test_error_other_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        LambdaLayer(8, **kwargs)


@pytest.mark.parametrize("arg", ["causal", "content", "multi_head", "use_position_bias"])
def test_boolean_arguments_reject_strings(arg):
    with pytest.raises(TypeError, match=f"`{arg}` must be True or False.*'false'"):
        LambdaLayer(8, **{arg: "false"})
