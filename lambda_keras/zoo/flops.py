"""Count the FLOPs of a model's forward pass, lambda layers included.

Convention (the one of the MobileNet and LambdaNetworks papers): FLOPs = 2 x multiply-adds of
the convolutions, dense layers and lambda layers for one image; batch normalisation,
activations, pooling, additions and the key softmax are not counted. For a lambda layer on
``n`` positions with ``d`` input channels (``|k|``, ``|h|``, ``|u|``, ``|v| = d_out / |h|``):

* projections: ``n * d * (h*k + g*k*u + g*v*u)`` (``g`` = 1, or ``h`` for multi-head);
* content lambda: ``n * g * k * v * u``; application to the queries: ``n * h * k * v``;
* position lambdas: ``(context pairs) * g * k * v * u`` where the context pairs are the
  (query, context) pairs inside the scope, the map and the mask: positions outside the map
  (the convolution's zero padding) and zeroed embeddings are not counted (App. F.3: "We do not
  count zeroed out flops").
"""

from __future__ import annotations

import keras
import numpy as np

from lambda_keras.layers import LambdaLayer

__all__ = ["count_flops", "lambda_layer_macs"]


def count_flops(model: keras.Model) -> int:
    """FLOPs (2 x multiply-adds) of one forward pass of one example through ``model``."""
    return 2 * _macs(model)


def _macs(model) -> int:
    total = 0
    for layer in model.layers:
        if isinstance(layer, keras.Model):
            total += _macs(layer)
        elif isinstance(layer, LambdaLayer):
            total += lambda_layer_macs(layer, layer.input.shape)
        elif isinstance(layer, keras.layers.DepthwiseConv2D):
            kh, kw = layer.kernel_size
            _, h, w, c = layer.output.shape
            total += h * w * c * kh * kw
        elif isinstance(layer, keras.layers.Conv2D):
            kh, kw = layer.kernel_size
            _, h, w, c_out = layer.output.shape
            c_in = layer.input.shape[-1]
            total += h * w * c_out * kh * kw * c_in // layer.groups
        elif isinstance(layer, keras.layers.Dense):
            total += int(np.prod(layer.input.shape[1:-1], dtype=np.int64)) * (
                layer.input.shape[-1] * layer.units
            )
    return int(total)


def lambda_layer_macs(layer: LambdaLayer, input_shape) -> int:
    """Multiply-adds of ``layer`` on one example of ``input_shape`` (``[batch, *spatial, d]``)."""
    spatial = tuple(input_shape[1:-1])
    if any(s is None for s in spatial):
        raise ValueError(f"Counting FLOPs needs a known spatial shape; received {input_shape}.")
    d = input_shape[-1]
    n = int(np.prod(spatial))
    h, k, u = layer.num_heads, layer.key_dim, layer.intra_depth
    g = layer.groups
    v = (layer.dim_out or d) // h
    macs = n * d * (h * k + g * k * u + g * v * u) + n * h * k * v
    if layer.content:
        macs += n * g * k * v * u
    if layer.position:
        macs += _context_pairs(layer, spatial) * g * k * v * u
    return int(macs)


def _context_pairs(layer: LambdaLayer, spatial) -> int:
    """Number of (query, context) pairs with a non-zero relative embedding."""
    if layer.scope_size is None:
        window = tuple(2 * s - 1 for s in spatial)
    elif isinstance(layer.scope_size, (tuple, list)):
        window = tuple(layer.scope_size)
    else:
        window = (layer.scope_size,) * len(spatial)
    if layer.context_mask is None and not layer.causal:
        # Separable: per axis, the context positions within reach of each query.
        pairs = 1
        for length, size in zip(spatial, window, strict=True):
            i = np.arange(length)
            reach = np.minimum(i + size // 2, length - 1) - np.maximum(i - size // 2, 0) + 1
            pairs *= int(reach.sum())
        return pairs
    grids = np.meshgrid(*[np.arange(s) for s in spatial], indexing="ij")
    coords = np.stack([g.ravel() for g in grids], axis=-1)  # [n, rank], raster order
    offsets = coords[None, :, :] - coords[:, None, :]  # pos(m) - pos(n)
    inside = np.all(np.abs(offsets) <= np.array(window) // 2, axis=-1)
    if layer.context_mask is not None:
        inside &= layer.context_mask
    if layer.causal:
        inside &= np.tri(len(coords), dtype=bool)
    return int(inside.sum())
