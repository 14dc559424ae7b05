"""Translation-equivariant relative position embeddings (paper §3.3).

One learned vector per relative offset ``pos(m) - pos(n)`` inside an odd window, re-indexed
into the dense ``E[n, m]`` tensor of the einsum implementation or used directly as the kernel
of the lambda convolution. Because the same tensor serves every implementation, a layer gives
identical results whichever implementation computes its position lambdas.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import keras
import numpy as np
from keras import ops

from lambda_keras import _validation as v

__all__ = ["RelativePositionEmbedding"]


@keras.saving.register_keras_serializable(package="lambda_keras")
class RelativePositionEmbedding(keras.layers.Layer):
    """Relative position embeddings ``R`` of a lambda layer.

    The weight ``embeddings`` has shape ``[*size, groups, key_dim, intra_depth]``: one
    ``[key_dim, intra_depth]`` matrix per relative offset and group. Along each spatial axis
    the index ``i`` stands for the offset ``i - size // 2``, so the centre is offset 0. For a
    query at position ``n`` and a context element at ``m`` the embedding is
    ``e_nm = R[pos(m) - pos(n)]`` (zero when the offset lies outside the window), which makes
    position lambdas translation equivariant.

    * A local scope of ``r x r`` uses ``size=(r, r)``.
    * A global context on feature maps up to ``H x W`` uses ``size=(2H - 1, 2W - 1)``, which
      covers every offset between two positions of the map.

    One instance can be passed as ``position_embedding=`` to several
    [`LambdaLayer`][lambda_keras.layers.LambdaLayer] s (paper Table 4, "shared embeddings"): the
    layers then train a single set of weights, and ``.keras`` files keep them shared.

    Args:
        size: Odd window extent per spatial axis: an int for sequences, a pair
            ``(height, width)`` for images (an int is also accepted for images and means a
            square window; ``rank`` then says how many spatial axes there are).
        key_dim: Query/key depth ``|k|``.
        intra_depth: Intra-depth ``|u|`` (paper Appendix C.4).
        groups: 1 for the multi-query lambda layer (all heads share one lambda), ``num_heads``
            for the multi-head variant (paper Fig. 7: one set of embeddings per head).
        rank: Number of spatial axes, 1 (sequences) or 2 (images). Defaults to
            ``len(size)`` when ``size`` is a tuple, else 2.
        embeddings_initializer: Defaults to the unit normal ``N(0, 1)`` of paper Appendix F.2.
        embeddings_regularizer: Optional regularizer for the embeddings.
    """

    def __init__(
        self,
        size: int | Sequence[int],
        key_dim: int = 16,
        intra_depth: int = 1,
        groups: int = 1,
        rank: int | None = None,
        embeddings_initializer: str | keras.initializers.Initializer | None = None,
        embeddings_regularizer: str | keras.regularizers.Regularizer | None = None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if rank is None:
            rank = len(size) if isinstance(size, (tuple, list)) else 2
        if rank not in (1, 2):
            raise ValueError(f"`rank` must be 1 (sequences) or 2 (images); received rank={rank!r}.")
        self.rank = int(rank)
        self.size = v.odd_window("size", size, self.rank)
        self.key_dim = v.positive_int("key_dim", key_dim)
        self.intra_depth = v.positive_int("intra_depth", intra_depth)
        self.groups = v.positive_int("groups", groups)
        self.embeddings_initializer = keras.initializers.get(
            embeddings_initializer or keras.initializers.RandomNormal(mean=0.0, stddev=1.0)
        )
        self.embeddings_regularizer = keras.regularizers.get(embeddings_regularizer)

    @property
    def embedding_shape(self) -> tuple[int, ...]:
        """Shape of the weight: ``(*size, groups, key_dim, intra_depth)``."""
        return (*self.size, self.groups, self.key_dim, self.intra_depth)

    @property
    def max_extent(self) -> tuple[int, ...]:
        """Largest map (per axis) whose every offset the window covers: ``(size + 1) // 2``."""
        return tuple((s + 1) // 2 for s in self.size)

    def build(self, input_shape=None):
        if self.built:
            return
        # Not autocast: lambdas are accumulated in float32 even under mixed precision.
        self.embeddings = self.add_weight(
            name="embeddings",
            shape=self.embedding_shape,
            initializer=self.embeddings_initializer,
            regularizer=self.embeddings_regularizer,
            autocast=False,
        )
        self.built = True

    def call(self, inputs):
        """Dense embeddings for the spatial shape of ``inputs``.

        Args:
            inputs: ``[batch, height, width, channels]`` or ``[batch, length, channels]``.

        Returns:
            ``[groups, key_dim, intra_depth, n, n]`` with ``n`` the number of positions.
        """
        return self.dense(list(ops.shape(inputs)[1:-1]))

    def compute_output_shape(self, input_shape):
        spatial = input_shape[1:-1]
        n = None if any(s is None for s in spatial) else int(np.prod(spatial))
        return (self.groups, self.key_dim, self.intra_depth, n, n)

    def window(self, spatial_shape: Sequence):
        """The embeddings cropped to the offsets a map of ``spatial_shape`` can hold.

        Along an axis of length ``L`` the offsets run from ``-(L-1)`` to ``L-1``; a window
        wider than ``2L - 1`` is cropped to its centre (cropped entries can never be used).
        Axes whose length is a tensor (not known statically) keep the full window, which gives
        the same convolution result.

        Returns:
            ``[*window, groups, key_dim, intra_depth]`` float32, usable as a convolution kernel
            whose index ``i`` is the offset ``i - window // 2``.
        """
        self._check_rank(spatial_shape)
        kernel = ops.convert_to_tensor(self.embeddings)
        for axis, (size, length) in enumerate(zip(self.size, spatial_shape, strict=True)):
            if not isinstance(length, (int, np.integer)):
                continue  # unknown length: keep the full window (a static kernel shape)
            keep = min(size, 2 * int(length) - 1)
            if keep < size:
                start = size // 2 - keep // 2
                kernel = kernel[(slice(None),) * axis + (slice(start, start + keep),)]
        return kernel

    def dense(self, spatial_shape: Sequence, rows: slice | None = None):
        """Re-index the window into the dense ``E`` tensor of the einsum (paper §3.3).

        ``E[n, m] = R[pos(m) - pos(n)]`` for offsets inside the window, zero outside, with
        positions flattened in row-major (raster) order. The layout is the paper's ``knm``
        (Fig. 6, 8) with the group and intra-depth axes: ``[groups, key_dim, intra_depth, n, m]``.

        Args:
            spatial_shape: The map's shape, ints or scalar tensors.
            rows: Optional slice of query positions ``n`` to compute (the einsum processes
                large maps in chunks of queries to bound memory).

        Returns:
            ``[groups, key_dim, intra_depth, n, m]`` (``n`` restricted to ``rows``), in the
            embeddings' dtype.
        """
        index = self.flat_index(spatial_shape)
        if rows is not None:
            index = index[rows]
        return ops.take(self.flat_table(), index, axis=3)

    def flat_table(self):
        """The window flattened, plus one zero entry: ``[groups, key_dim, intra_depth, S + 1]``.

        ``S = prod(size)``; index ``S`` stands for "outside the window".
        """
        tail = self.embedding_shape[self.rank :]
        table = ops.reshape(ops.convert_to_tensor(self.embeddings), [-1, *tail])
        table = ops.concatenate([table, ops.zeros([1, *tail], table.dtype)], axis=0)
        return ops.transpose(table, [1, 2, 3, 0])

    def flat_index(self, spatial_shape: Sequence):
        """Index into
        [`flat_table`][lambda_keras.layers.relative_position_embedding.RelativePositionEmbedding.flat_table]
        of each (query ``n``, context ``m``) pair.

        Returns:
            int32 ``[n, m]``: the flattened window position of ``pos(m) - pos(n)``, or
            ``prod(size)`` (the zero entry) when the offset is outside the window.
        """
        self._check_rank(spatial_shape)
        lengths = _static_lengths(spatial_shape)
        if lengths is not None:  # a NumPy constant: no op per call (eager) and none in a graph
            return ops.convert_to_tensor(_static_flat_index(tuple(self.size), lengths))
        return _flat_index(ops, self.size, spatial_shape)

    def _check_rank(self, spatial_shape):
        if len(spatial_shape) != self.rank:
            raise ValueError(
                f"This RelativePositionEmbedding has rank={self.rank} (size={self.size}); "
                f"received a spatial shape with {len(spatial_shape)} axes: {spatial_shape}."
            )

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "size": list(self.size),
                "key_dim": self.key_dim,
                "intra_depth": self.intra_depth,
                "groups": self.groups,
                "rank": self.rank,
                "embeddings_initializer": keras.initializers.serialize(self.embeddings_initializer),
                "embeddings_regularizer": keras.regularizers.serialize(self.embeddings_regularizer),
            }
        )
        return config


def _static_lengths(spatial_shape: Sequence) -> tuple[int, ...] | None:
    """The map's lengths as ints where every one is known before the call runs, else None."""
    if all(isinstance(length, (int, np.integer)) for length in spatial_shape):
        return tuple(int(length) for length in spatial_shape)
    return None


@functools.lru_cache(maxsize=8)
def _static_flat_index(size: tuple[int, ...], lengths: tuple[int, ...]) -> np.ndarray:
    """[`RelativePositionEmbedding.flat_index`][lambda_keras.layers.relative_position_embedding.RelativePositionEmbedding.flat_index]
    of a map of known ``lengths``, in NumPy (int32 ``[n, m]``), one per window and map."""
    return _flat_index(np, size, lengths)


def _flat_index(xp, size: Sequence[int], spatial_shape: Sequence):
    """The index of each (query, context) pair into the flattened window, computed with ``xp``:
    ``keras.ops`` (lengths that may be scalar tensors) or ``numpy`` (known lengths), which name
    the functions used here alike."""
    outside = int(np.prod(size))
    index, valid = None, None
    for window, length in zip(size, spatial_shape, strict=True):
        axis_index, axis_valid = _offset_index(xp, length, window)
        if index is None:
            index, valid = axis_index, axis_valid
        else:
            # [H, H'] x [W, W'] -> [H, H', W, W'] -> [H, W, H', W']
            index = index[:, :, None, None] * window + axis_index[None, None]
            valid = xp.logical_and(valid[:, :, None, None], axis_valid[None, None])
            index = xp.transpose(index, [0, 2, 1, 3])
            valid = xp.transpose(valid, [0, 2, 1, 3])
    index = xp.where(valid, index, outside)
    n = 1
    for length in spatial_shape:
        n = n * length
    return xp.reshape(index, [n, n])


def _offset_index(xp, length, size: int):
    """Window index of ``pos(m) - pos(n)`` for a 1-D axis, and whether it is in the window
    (``xp``: ``keras.ops`` or ``numpy``).

    Returns:
        ``index`` int32 ``[length, length]`` (rows n, columns m), clipped into range, and
        ``valid`` bool of the same shape.
    """
    pos = xp.arange(length, dtype="int32")
    index = pos[None, :] - pos[:, None] + size // 2
    valid = xp.logical_and(index >= 0, index < size)
    return xp.clip(index, 0, size - 1), valid
