"""The three interchangeable computations of position lambdas (paper Fig. 3, 5 and 8).

All take float32 tensors and compute ``lambda_n = sum_{m, u} e_nm[k, u] v_m[v, u]``, i.e.
``[k, v]`` per query position ``n``, per group ``g`` (one group for the multi-query layer,
one per head for the multi-head layer):

* [`einsum_position_lambdas`][lambda_keras.layers.position_lambdas.einsum_position_lambdas] — dense
  ``E[k, n, m]`` (global, local by zeroed embeddings, or masked), ``Θ(bnmkv)`` time and ``Θ(knm)``
  memory.
* [`conv_position_lambdas`][lambda_keras.layers.position_lambdas.conv_position_lambdas] — the lambda
  convolution as an (n+1)-d convolution that treats the value depth ``v`` as an extra spatial axis
  of kernel extent 1 (``keras.ops.conv`` on 5-D values for images, the paper's conv3d; 4-D for
  sequences); intra-depth ``u`` is the
  input-channel axis.
* [`depthwise_position_lambdas`][lambda_keras.layers.position_lambdas.depthwise_position_lambdas] —
  an n-d depthwise convolution with channel multiplier ``k`` over the ``v`` channels
  (``keras.ops.depthwise_conv``); ``u`` must be 1.

The convolutions take the embedding window as a kernel whose index ``i`` is the offset
``i - window // 2`` (``pos(m) - pos(n)``); "SAME" zero padding makes positions outside the
map contribute nothing, exactly as the einsum, which only sums over positions in the map.
"""

from __future__ import annotations

from keras import ops

__all__ = [
    "conv_position_lambdas",
    "depthwise_position_lambdas",
    "einsum_position_lambdas",
]


def einsum_position_lambdas(embeddings, values):
    """Position lambdas from dense embeddings.

    Args:
        embeddings: ``[groups, key_dim, intra_depth, n, m]`` (the paper's ``knm`` layout).
        values: ``[batch, m, groups, value_dim, intra_depth]``.

    Returns:
        ``[batch, n, groups, key_dim, value_dim]``.
    """
    groups, key_dim, intra_depth = embeddings.shape[:3]
    if groups == 1 and intra_depth == 1:
        # One matmul [k*n, m] x [m, b*v]: far faster than the generic einsum.
        batch, m = ops.shape(values)[:2]
        value_dim = values.shape[3]
        n = ops.shape(embeddings)[3]
        e = ops.reshape(embeddings, [key_dim * n, m])
        vals = ops.reshape(ops.transpose(values[:, :, 0, :, 0], [1, 0, 2]), [m, batch * value_dim])
        out = ops.reshape(ops.matmul(e, vals), [key_dim, n, batch, value_dim])
        return ops.transpose(out, [2, 1, 0, 3])[:, :, None]
    return ops.einsum("gkunm,bmgvu->bngkv", embeddings, values)


def conv_position_lambdas(kernel, values):
    """Lambda convolution with a regular (n+1)-d convolution.

    Args:
        kernel: ``[*window, groups, key_dim, intra_depth]``, odd window.
        values: ``[batch, *spatial, groups, value_dim, intra_depth]`` with 1 or 2 spatial axes.

    Returns:
        ``[batch, *spatial, groups, key_dim, value_dim]``.
    """
    rank = len(kernel.shape) - 3
    groups = kernel.shape[rank]
    outputs = []
    for g in range(groups):
        vals = values[..., g, :, :]  # [b, *spatial, v, u]: v is a spatial axis, u the channels
        filters = ops.swapaxes(kernel[..., g, :, :], -1, -2)  # [*window, u, k]
        filters = ops.expand_dims(filters, rank)  # extent 1 along v: [*window, 1, u, k]
        out = ops.conv(vals, filters, strides=1, padding="same", data_format="channels_last")
        outputs.append(out)  # [b, *spatial, v, k]
    out = ops.stack(outputs, axis=rank + 1)  # [b, *spatial, g, v, k]
    return ops.swapaxes(out, -1, -2)


def depthwise_position_lambdas(kernel, values):
    """Lambda convolution with a depthwise convolution and channel multiplier ``key_dim``.

    Args:
        kernel: ``[*window, groups, key_dim, 1]``, odd window.
        values: ``[batch, *spatial, groups, value_dim, 1]`` with 1 or 2 spatial axes.

    Returns:
        ``[batch, *spatial, groups, key_dim, value_dim]``.
    """
    rank = len(kernel.shape) - 3
    groups, key_dim, intra_depth = kernel.shape[rank:]
    if intra_depth != 1:
        raise ValueError(
            "The depthwise lambda convolution cannot sum over the intra-depth; "
            f"received intra_depth={intra_depth}. Use implementation='conv' or 'einsum'."
        )
    value_dim = values.shape[-2]
    shape = ops.shape(values)
    batch, spatial = shape[0], list(shape[1 : 1 + rank])
    channels = groups * value_dim
    x = ops.reshape(values, [batch, *spatial, channels])
    # Filter [*window, g, 1, k] tiled over v: channel (g, v) gets the embeddings of group g.
    filters = ops.tile(
        ops.transpose(kernel, [*range(rank), rank, rank + 2, rank + 1]),
        [1] * (rank + 1) + [value_dim, 1],
    )
    filters = ops.reshape(filters, [*kernel.shape[:rank], channels, key_dim])
    out = ops.depthwise_conv(x, filters, strides=1, padding="same", data_format="channels_last")
    out = ops.reshape(out, [batch, *spatial, groups, value_dim, key_dim])
    return ops.swapaxes(out, -1, -2)
