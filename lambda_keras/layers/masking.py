"""The lambda layer's masked contexts (App. C.2, Fig. 6): which context positions each query
sees, and masking by selection, so that nothing of a masked position reaches a query."""

from __future__ import annotations

from functools import cache

import numpy as np
from keras import ops

__all__ = ["causal_window_mask", "context_mask", "select_finite_values"]


def context_mask(mask: np.ndarray | None, causal: bool, n, dtype):
    """``[n, m]`` context mask (1 = visible), or None for an unmasked context."""
    if mask is not None:
        return ops.convert_to_tensor(mask, dtype=dtype)
    if causal:
        return ops.tril(ops.ones([n, n], dtype))  # m <= n
    return None


def select_finite_values(values, mask, causal: bool):
    """Masking by selection: a masked context element must not reach a query in any way,
    also not as ``0 * nan``. Non-finite values are replaced by zeros, and the queries whose
    *visible* context holds one are marked (their outputs become NaN, as unmasked
    arithmetic would make them).

    Args:
        values: ``[b, m, g, v, u]``; mask: ``[n, m]`` (1 = visible).

    Returns:
        ``(values with non-finite entries zeroed, poisoned [b, n] booleans)``.
    """
    finite = ops.isfinite(values)
    bad = 1.0 - ops.cast(ops.all(finite, axis=[2, 3, 4]), mask.dtype)  # [b, m]
    if causal:  # query n sees m <= n
        poisoned = ops.cumsum(bad, axis=1) > 0
    else:
        poisoned = ops.einsum("nm,bm->bn", mask, bad) > 0
    return ops.where(finite, values, ops.zeros_like(values)), poisoned


@cache
def causal_window_mask(window: tuple[int, ...]) -> np.ndarray:
    """Kernel mask keeping offsets ``pos(m) - pos(n)`` with ``m <= n`` in raster order.

    Returns:
        float32 ``[*window, 1, 1, 1]``.
    """
    offsets = np.stack(
        np.meshgrid(*[np.arange(w) - w // 2 for w in window], indexing="ij"), axis=-1
    )
    if len(window) == 1:
        keep = offsets[..., 0] <= 0
    else:
        dy, dx = offsets[..., 0], offsets[..., 1]
        keep = (dy < 0) | ((dy == 0) & (dx <= 0))
    return keep.astype("float32")[..., None, None, None]
