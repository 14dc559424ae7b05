"""What the LambdaLayer tests share: a context mask with holes, a layer with non-trivial
batch-norm statistics, the naive reference run with a layer's weights, and the comparison."""

import numpy as np

from lambda_keras.layers import LambdaLayer
from tests.backend import numpy
from tests.layers.lambda_reference import reference_lambda_layer

# A context mask with holes, one query that sees nothing, one that sees only itself.
MASK_20 = np.random.default_rng(0).random((20, 20)) < 0.6
MASK_20[3] = False
MASK_20[7] = np.eye(20, dtype=bool)[7]


def assert_matches(actual, desired):
    """Agreement to 1e-5 of the output scale: max |a - d| <= 1e-5 * max(1, max |d|).

    float32 keeps ~7 digits, so outputs of magnitude ~40 (the paper's defaults on random
    inputs) differ from a float64 reference by ~1e-5 in absolute terms.
    """
    desired = numpy(desired)
    assert actual.shape == desired.shape
    scale = max(1.0, float(np.abs(desired).max()))
    np.testing.assert_allclose(actual, desired, rtol=0, atol=1e-5 * scale)


def randomize_batch_norms(layer, rng):
    """Give the query/value batch norms non-trivial statistics, so the reference checks them."""
    for norm in (layer.query_norm, layer.value_norm):
        if norm is None:
            continue
        c = norm.gamma.shape[0]
        norm.gamma.assign(rng.uniform(0.5, 1.5, c))
        norm.beta.assign(rng.normal(0, 0.3, c))
        norm.moving_mean.assign(rng.normal(0, 0.3, c))
        norm.moving_variance.assign(rng.uniform(0.5, 2.0, c))


def reference_for(layer, x, qkv_kernel=None, embeddings=None):
    """Run the NumPy reference with the layer's configuration and weights (or the given
    projection kernel and position embeddings instead of the layer's)."""

    def norm_params(norm):
        if norm is None:
            return None
        return (
            norm.gamma.numpy(),
            norm.beta.numpy(),
            norm.moving_mean.numpy(),
            norm.moving_variance.numpy(),
            norm.epsilon,
        )

    n = int(np.prod(x.shape[1:-1]))
    mask = layer.context_mask
    if layer.causal:
        mask = np.tril(np.ones((n, n), dtype=bool))
    return reference_lambda_layer(
        x,
        layer.qkv_kernel.numpy() if qkv_kernel is None else qkv_kernel,
        embeddings
        if embeddings is not None or not layer.position
        else layer.position_embedding.embeddings.numpy(),
        key_dim=layer.key_dim,
        num_heads=layer.num_heads,
        intra_depth=layer.intra_depth,
        multi_head=layer.multi_head,
        content=layer.content,
        position=layer.position,
        key_normalization=layer.key_normalization,
        query_normalization=layer.query_normalization,
        context_mask=mask,
        query_norm=norm_params(layer.query_norm),
        value_norm=norm_params(layer.value_norm),
        position_bias=None if layer.position_bias is None else layer.position_bias.numpy(),
    )


def build_layer(x, **kwargs):
    kwargs = {"dim_out": 12, "key_dim": 4, "num_heads": 3, **kwargs}
    layer = LambdaLayer(**kwargs)
    layer.build(x.shape)
    randomize_batch_norms(layer, np.random.default_rng(1))
    return layer
