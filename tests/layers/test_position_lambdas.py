"""The position-lambda functions agree with each other and with a direct sum."""

import keras
import numpy as np
import pytest

from lambda_keras.layers import (
    RelativePositionEmbedding,
    conv_position_lambdas,
    depthwise_position_lambdas,
    einsum_position_lambdas,
)
from tests.backend import numpy

RNG = np.random.default_rng(3)


def direct(table, values):
    """sum_{m,u} R[pos(m) - pos(n)] v_m, looping over query positions: [b, *S, g, k, v]."""
    rank = values.ndim - 4
    spatial = values.shape[1 : 1 + rank]
    window = np.array(table.shape[:rank])
    out = np.zeros(
        values.shape[: 1 + rank] + (table.shape[rank], table.shape[rank + 1], values.shape[-2])
    )
    for n in np.ndindex(*spatial):
        for m in np.ndindex(*spatial):
            index = np.subtract(m, n) + window // 2
            if np.all(index >= 0) and np.all(index < window):
                e = table[tuple(index)]  # [g, k, u]
                out[(slice(None), *n)] += np.einsum("gku,bgvu->bgkv", e, values[(slice(None), *m)])
    return out


@pytest.mark.parametrize(
    "size,spatial,groups,intra_depth",
    [((5, 3), (6, 4), 1, 1), ((3, 3), (5, 5), 2, 2), ((7,), (10,), 1, 3), ((9, 9), (3, 4), 3, 1)],
)
def test_all_implementations_equal_the_direct_sum(size, spatial, groups, intra_depth):
    emb = RelativePositionEmbedding(size, key_dim=4, intra_depth=intra_depth, groups=groups)
    emb.build()
    values = RNG.normal(size=(2, *spatial, groups, 5, intra_depth)).astype("float32")
    expected = direct(emb.embeddings.numpy(), values)
    n = int(np.prod(spatial))
    flat = values.reshape(2, n, groups, 5, intra_depth)
    got = {
        "einsum": numpy(einsum_position_lambdas(emb.dense(spatial), flat)),
        "conv": numpy(conv_position_lambdas(emb.window(spatial), values)),
    }
    if intra_depth == 1:
        got["depthwise"] = numpy(depthwise_position_lambdas(emb.window(spatial), values))
    for name, out in got.items():
        np.testing.assert_allclose(
            out.reshape(expected.shape), expected, rtol=1e-5, atol=1e-5, err_msg=name
        )


def test_value_depth_is_the_extra_spatial_axis_not_a_channel():
    """A kernel that is zero except at offset (0, 0) must return each value unchanged:
    convolving over the wrong axes (the bug of other Keras ports) would mix values."""
    kernel = np.zeros((3, 3, 1, 2, 1), "float32")
    kernel[1, 1, 0, :, 0] = [1.0, 2.0]
    values = RNG.normal(size=(1, 4, 5, 1, 6, 1)).astype("float32")
    for fn in (conv_position_lambdas, depthwise_position_lambdas):
        out = numpy(fn(keras.ops.convert_to_tensor(kernel), values))  # [1, 4, 5, 1, 2, 6]
        np.testing.assert_allclose(out[..., 0, 0, :], values[..., 0, :, 0], rtol=1e-6)
        np.testing.assert_allclose(out[..., 0, 1, :], 2 * values[..., 0, :, 0], rtol=1e-6)


def test_depthwise_rejects_intra_depth():
    with pytest.raises(ValueError, match="intra_depth=2"):
        depthwise_position_lambdas(
            keras.ops.zeros((3, 3, 1, 4, 2)), keras.ops.zeros((1, 5, 5, 1, 3, 2))
        )
