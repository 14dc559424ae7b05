"""Per-image gathers: rows of a batch picked by per-image indices (``tf.gather(...,
batch_dims=1)`` in ``keras.ops``)."""

from __future__ import annotations

from keras import ops

from lambda_keras.detection.ops._checks import Tensor

__all__ = ["gather_rows"]


def gather_rows(values: Tensor, indices: Tensor) -> Tensor:
    """``values[b, indices[b, k], ...]`` for every image ``b``.

    Args:
        values: ``[batch, n, ...]``.
        indices: ``[batch, k]`` integer indices into ``n``.

    Returns:
        ``[batch, k, ...]``.
    """
    shape = ops.shape(values)
    extra = len(shape) - 2
    index = ops.reshape(indices, (*ops.shape(indices), *([1] * extra)))
    index = ops.broadcast_to(index, (*ops.shape(indices), *shape[2:]))
    return ops.take_along_axis(values, index, axis=1)
