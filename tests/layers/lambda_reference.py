"""A deliberately naive NumPy reference of the lambda layer (paper Eq. 1-2, App. C.2-C.4).

Loops over batch elements and queries, looks every relative position up explicitly and
applies the context mask explicitly, in float64. It shares nothing with the package but the
documented weight layout, so the tests compare the layer against the paper, not against itself.
"""

from __future__ import annotations

import itertools

import numpy as np


def batch_norm(x, gamma, beta, mean, variance, epsilon):
    """Inference-mode batch normalisation over the last axis."""
    return gamma * (x - mean) / np.sqrt(variance + epsilon) + beta


def reference_lambda_layer(
    x,
    qkv_kernel,
    position_embeddings,
    *,
    key_dim,
    num_heads,
    intra_depth=1,
    multi_head=False,
    content=True,
    position=True,
    key_normalization="softmax",
    query_normalization="none",
    context_mask=None,
    query_norm=None,
    value_norm=None,
    position_bias=None,
):
    """Output of a lambda layer for input ``x``.

    Args:
        x: ``[batch, *spatial, d]``.
        qkv_kernel: ``[d, h*k + g*k*u + g*v*u]``: queries ``[h, k]``, keys ``[g, k, u]``,
            values ``[g, v, u]``, with ``g`` 1 (multi-query) or ``h`` (multi-head).
        position_embeddings: ``R[*window, g, k, u]``, the window index ``i`` standing for the
            relative offset ``i - window // 2``; offsets outside the window have no embedding.
        context_mask: ``[n, n]`` booleans, ``[query, context]``, raster order; None = all.
        query_norm / value_norm: ``(gamma, beta, mean, variance, epsilon)`` or None.
        position_bias: ``[g, k]`` constant added to every position lambda (all value
            channels), or None.

    Returns:
        ``[batch, *spatial, h * v]``.
    """
    x = np.asarray(x, np.float64)
    batch, spatial, d = x.shape[0], x.shape[1:-1], x.shape[-1]
    positions = list(itertools.product(*[range(s) for s in spatial]))
    n = len(positions)
    h, k, u = num_heads, key_dim, intra_depth
    g = h if multi_head else 1
    total = qkv_kernel.shape[1]
    value_dim = (total - h * k - g * k * u) // (g * u)

    flat = x.reshape(batch, n, d) @ np.asarray(qkv_kernel, np.float64)
    q = flat[..., : h * k]
    keys = flat[..., h * k : h * k + g * k * u]
    values = flat[..., h * k + g * k * u :]
    if query_norm is not None:
        q = batch_norm(q, *query_norm)
    if value_norm is not None:
        values = batch_norm(values, *value_norm)
    q = q.reshape(batch, n, h, k)
    keys = keys.reshape(batch, n, g, k, u)
    values = values.reshape(batch, n, g, value_dim, u)

    if position:
        table = np.asarray(position_embeddings, np.float64)
        window = table.shape[: len(spatial)]
        centre = np.array([w // 2 for w in window])

    out = np.zeros((batch, n, h, value_dim))
    for b in range(batch):
        for i in range(n):
            context = [j for j in range(n) if context_mask is None or context_mask[i][j]]
            lam = np.zeros((g, k, value_dim))
            if content and context:
                kc = keys[b, context]  # [c, g, k, u]
                if key_normalization == "softmax":
                    e = np.exp(kc - kc.max(axis=0, keepdims=True))
                    kc = e / e.sum(axis=0, keepdims=True)
                elif key_normalization == "l2":
                    kc = kc / np.sqrt((kc**2).sum(axis=0, keepdims=True))
                for c, j in enumerate(context):
                    for gg in range(g):
                        lam[gg] += kc[c, gg] @ values[b, j, gg].T  # [k, u] @ [u, v]
            if position:
                for j in context:
                    index = np.subtract(positions[j], positions[i]) + centre
                    if np.all(index >= 0) and np.all(index < window):
                        e_nm = table[tuple(index)]  # [g, k, u]
                        for gg in range(g):
                            lam[gg] += e_nm[gg] @ values[b, j, gg].T
                if position_bias is not None:
                    lam += np.asarray(position_bias, np.float64)[:, :, None]
            for head in range(h):
                query = q[b, i, head]
                if query_normalization == "softmax":
                    query = np.exp(query - query.max())
                    query = query / query.sum()
                out[b, i, head] = lam[head if multi_head else 0].T @ query
    return out.reshape(batch, *spatial, h * value_dim)
