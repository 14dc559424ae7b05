"""Static shape checks of the ops' tensor arguments: a ``ValueError`` naming the argument and the
shape received, raised when the op is called or traced (shapes known then cost nothing at run
time), instead of a backend error from inside a slice or a matmul. Backend-neutral
(``keras.ops``)."""

from __future__ import annotations

from typing import Any

import numpy as np
from keras import ops

# A tensor of the Keras backend (or anything ``keras.ops.convert_to_tensor`` reads).
Tensor = Any


def rank(t) -> int | None:
    """The number of dimensions of ``t``, None where it is not known (a TensorFlow graph)."""
    try:
        return len(t.shape)
    except (TypeError, ValueError):
        return None


def static_shape(t) -> tuple | str:
    """The shape of ``t`` as a tuple (None for an unknown size), or ``"unknown"``."""
    return tuple(t.shape) if rank(t) is not None else "unknown"


def tensor(
    name: str, value, rank_: int | None, layout: str, dtype="float32", on_host: bool = False
):
    """``value`` as a tensor (cast to ``dtype`` when given) of ``rank_`` dimensions if known;
    with ``on_host``, as a NumPy array."""
    if on_host:
        t = np.asarray(ops.convert_to_numpy(value), dtype)
    elif dtype is None:
        t = ops.convert_to_tensor(value)
    else:
        t = ops.convert_to_tensor(value, dtype)
    if rank_ is not None and rank(t) is not None and rank(t) != rank_:
        raise ValueError(f"`{name}` must have shape {layout}; received shape {static_shape(t)}.")
    return t


def boxes(
    name: str, value, rank_: int | None = None, layout: str | None = None, on_host: bool = False
):
    """``value`` as float32 boxes ``[..., 4]`` (of ``rank_`` dimensions if given; a NumPy array
    with ``on_host``)."""
    layout = layout or "[..., 4] (y1, x1, y2, x2)"
    t = tensor(name, value, rank_, layout, on_host=on_host)
    if rank(t) == 0 or (rank(t) is not None and t.shape[-1] not in (None, 4)):
        raise ValueError(f"`{name}` must have shape {layout}; received shape {static_shape(t)}.")
    return t


def same_sizes(first: str, a, second: str, b, axes: int) -> None:
    """The leading ``axes`` dimensions of ``a`` and ``b`` agree where both are known."""
    if rank(a) is None or rank(b) is None:
        return
    for axis in range(axes):
        size_a, size_b = a.shape[axis], b.shape[axis]
        if size_a is not None and size_b is not None and size_a != size_b:
            raise ValueError(
                f"`{first}` and `{second}` must agree in their first {axes} dimension(s); "
                f"received shapes {static_shape(a)} and {static_shape(b)}."
            )


def broadcastable(first: str, a, second: str, b) -> None:
    """The leading dimensions (all but the last) of ``a`` and ``b`` broadcast together."""
    if rank(a) is None or rank(b) is None:
        return
    left, right = tuple(a.shape[:-1])[::-1], tuple(b.shape[:-1])[::-1]
    for x, y in zip(left, right, strict=False):  # the shorter one broadcasts
        if x is not None and y is not None and 1 not in (x, y) and x != y:
            raise ValueError(
                f"`{first}` and `{second}` must have broadcastable leading dimensions; received "
                f"shapes {static_shape(a)} and {static_shape(b)}."
            )
