"""Static shape checks of the ops' tensor arguments: a ``ValueError`` naming the argument and the
shape received, raised when the op is called or traced (shapes known then cost nothing at run
time), instead of a TensorFlow error from inside a slice or a matmul."""

from __future__ import annotations

import tensorflow as tf


def _shape(tensor: tf.Tensor) -> tuple:
    return tuple(tensor.shape) if tensor.shape.rank is not None else "unknown"


def tensor(name: str, value, rank: int | None, layout: str, dtype=tf.float32) -> tf.Tensor:
    """``value`` as a tensor (cast to ``dtype`` when given) of ``rank`` dimensions if known."""
    t = tf.convert_to_tensor(value) if dtype is None else tf.convert_to_tensor(value, dtype)
    if rank is not None and t.shape.rank is not None and t.shape.rank != rank:
        raise ValueError(f"`{name}` must have shape {layout}; received shape {_shape(t)}.")
    return t


def boxes(name: str, value, rank: int | None = None, layout: str | None = None) -> tf.Tensor:
    """``value`` as float32 boxes ``[..., 4]`` (of ``rank`` dimensions if given)."""
    layout = layout or "[..., 4] (y1, x1, y2, x2)"
    t = tensor(name, value, rank, layout)
    if t.shape.rank == 0 or (t.shape.rank is not None and t.shape[-1] not in (None, 4)):
        raise ValueError(f"`{name}` must have shape {layout}; received shape {_shape(t)}.")
    return t


def same_sizes(first: str, a: tf.Tensor, second: str, b: tf.Tensor, axes: int) -> None:
    """The leading ``axes`` dimensions of ``a`` and ``b`` agree where both are known."""
    if a.shape.rank is None or b.shape.rank is None:
        return
    for axis in range(axes):
        size_a, size_b = a.shape[axis], b.shape[axis]
        if size_a is not None and size_b is not None and size_a != size_b:
            raise ValueError(
                f"`{first}` and `{second}` must agree in their first {axes} dimension(s); "
                f"received shapes {_shape(a)} and {_shape(b)}."
            )


def broadcastable(first: str, a: tf.Tensor, second: str, b: tf.Tensor) -> None:
    """The leading dimensions (all but the last) of ``a`` and ``b`` broadcast together."""
    if a.shape.rank is None or b.shape.rank is None:
        return
    try:
        tf.broadcast_static_shape(a.shape[:-1], b.shape[:-1])
    except ValueError:
        raise ValueError(
            f"`{first}` and `{second}` must have broadcastable leading dimensions; received "
            f"shapes {_shape(a)} and {_shape(b)}."
        ) from None
