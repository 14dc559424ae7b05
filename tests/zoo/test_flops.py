"""The FLOP counter on layers whose multiply-adds can be counted by hand."""

import keras
import numpy as np
import pytest

from lambda_keras.layers import LambdaLayer
from lambda_keras.zoo.flops import count_flops, lambda_layer_macs


def test_convolutions_and_dense_by_hand():
    inputs = keras.Input((8, 8, 3))
    x = keras.layers.Conv2D(4, 3, padding="same")(inputs)  # 8*8*4*9*3
    x = keras.layers.DepthwiseConv2D(3, strides=2, padding="same")(x)  # 4*4*4*9
    x = keras.layers.Conv2D(6, 1, groups=2)(x)  # 4*4*6*1*4/2
    x = keras.layers.GlobalAveragePooling2D()(x)
    x = keras.layers.Dense(5)(x)  # 6*5
    macs = 8 * 8 * 4 * 9 * 3 + 4 * 4 * 4 * 9 + 4 * 4 * 6 * 2 + 6 * 5
    assert count_flops(keras.Model(inputs, x)) == 2 * macs


def brute_force_pairs(spatial, scope, mask=None):
    coords = list(np.ndindex(*spatial))
    count = 0
    for i, p in enumerate(coords):
        for j, q in enumerate(coords):
            inside = all(abs(b - a) <= s // 2 for a, b, s in zip(p, q, scope, strict=True))
            if inside and (mask is None or mask[i, j]):
                count += 1
    return count


@pytest.mark.parametrize(
    "kwargs,spatial",
    [
        (dict(scope_size=5), (7, 6)),
        (dict(scope_size=None), (5, 5)),
        (dict(scope_size=3, causal=True), (4, 5)),
        (dict(scope_size=3, intra_depth=2, multi_head=True), (9,)),
        (dict(scope_size=3, content=False), (4, 4)),
    ],
)
def test_lambda_layer_macs_by_hand(kwargs, spatial):
    d, d_out, k, h = 8, 12, 4, 3
    layer = LambdaLayer(d_out, key_dim=k, num_heads=h, **kwargs)
    u = layer.intra_depth
    g = h if layer.multi_head else 1
    v = d_out // h
    n = int(np.prod(spatial))
    scope = (
        tuple(2 * s - 1 for s in spatial)
        if layer.scope_size is None
        else (layer.scope_size,) * len(spatial)
    )
    mask = np.tri(n, dtype=bool) if layer.causal else None
    expected = (
        n * d * (h * k + g * k * u + g * v * u)  # projections
        + n * h * k * v  # lambdas applied to the queries
        + (n * g * k * v * u if layer.content else 0)  # content lambda
        + brute_force_pairs(spatial, scope, mask) * g * k * v * u  # position lambdas
    )
    assert lambda_layer_macs(layer, (None, *spatial, d)) == expected


def test_unknown_spatial_shape_is_an_error():
    with pytest.raises(ValueError, match="spatial shape"):
        lambda_layer_macs(LambdaLayer(8), (None, None, None, 8))
