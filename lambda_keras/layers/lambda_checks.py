"""The lambda layer's argument and shape checks: every mistake is a ``ValueError`` (or
``TypeError``) naming the argument, the value received and what is allowed, before anything is
built; sizes known only when a TensorFlow graph runs are asserted then
([`lambda_keras.backend.graph_checks`][lambda_keras.backend.graph_checks])."""

from __future__ import annotations

import numpy as np
from keras import ops

from lambda_keras import _validation as v
from lambda_keras.backend.graph_checks import assert_when_run, is_dynamic
from lambda_keras.layers.relative_position_embedding import RelativePositionEmbedding

__all__ = [
    "MAX_EMBEDDING_ELEMENTS",
    "check_combinations",
    "check_embedding_size",
    "check_input_rank",
    "check_map",
    "check_shared_embedding",
    "embedding_size",
]


def check_combinations(layer):
    """Options that are valid alone but not together."""
    if not (layer.content or layer.position):
        raise ValueError(
            "At least one of `content` and `position` must be True; received "
            "content=False, position=False."
        )
    if layer.use_position_bias and not layer.position:
        raise ValueError(
            "`use_position_bias=True` needs position lambdas; received position=False."
        )
    if layer.context_mask is not None and layer.implementation in ("conv", "depthwise"):
        raise ValueError(
            f"`context_mask` needs the einsum implementation; received "
            f"implementation={layer.implementation!r}. Use implementation='einsum' or 'auto'."
        )
    if layer.context_mask is not None and layer.causal:
        raise ValueError(
            "Pass either `causal=True` or a `context_mask`, not both (fold the causal "
            "mask into the context_mask)."
        )


def check_shared_embedding(layer, embedding):
    """A shared ``position_embedding`` fits the layer: a RelativePositionEmbedding of its key
    depth, intra-depth, groups and (for a local scope) window."""
    if not layer.position:
        raise ValueError(
            "`position_embedding` was given but position=False: a content-only layer has "
            "no position embeddings."
        )
    if not isinstance(embedding, RelativePositionEmbedding):
        raise TypeError(
            "`position_embedding` must be a lambda_keras.layers.RelativePositionEmbedding; "
            f"received {type(embedding).__name__}."
        )
    expected = {
        "key_dim": layer.key_dim,
        "intra_depth": layer.intra_depth,
        "groups": layer.groups,
    }
    for name, value in expected.items():
        if getattr(embedding, name) != value:
            raise ValueError(
                f"The shared position_embedding has {name}={getattr(embedding, name)} but "
                f"this layer needs {name}={value}."
            )
    if layer.scope_size is not None:
        scope = v.odd_window("scope_size", layer.scope_size, embedding.rank)
        if scope != embedding.size:
            raise ValueError(
                f"The shared position_embedding has size={embedding.size} but this layer's "
                f"scope_size={layer.scope_size!r}; pass scope_size={embedding.size!r} (local) "
                "or scope_size=None (global context up to the embedding's range)."
            )


def embedding_size(layer, spatial) -> tuple[int, ...]:
    """The relative embeddings' extent per spatial axis: the odd `scope_size` of a local
    layer, else `2 * s - 1` for each side `s` of the largest map (`max_size`, or the map's own
    static size), every offset between two of its positions; an error naming the argument
    when neither is known or the rank does not fit."""
    rank = len(spatial)
    if layer.scope_size is not None:
        return v.odd_window("scope_size", layer.scope_size, rank)
    max_size = layer.max_size
    if max_size is None:
        if any(s is None for s in spatial):
            raise ValueError(
                "A global context (scope_size=None) needs the largest map size to size its "
                f"relative embeddings: pass `max_size`; received spatial shape {spatial} "
                "with unknown dimensions."
            )
        max_size = spatial
    max_size = tuple(max_size) if isinstance(max_size, (tuple, list)) else (max_size,) * rank
    if len(max_size) == 1:
        max_size = max_size * rank
    if len(max_size) != rank:
        raise ValueError(
            f"`max_size` must have one entry per spatial axis ({rank}); received "
            f"max_size={layer.max_size!r}."
        )
    return tuple(2 * s - 1 for s in max_size)


def check_context_mask_size(layer, n):
    """The context mask must be ``[n, n]`` for inputs of ``n`` positions (an int; ``None``
    or a tensor when unknown, checked when the layer is called on a known shape)."""
    if layer.context_mask is None or not isinstance(n, (int, np.integer)):
        return
    if layer.context_mask.shape != (n, n):
        raise ValueError(
            f"`context_mask` must have shape [n, n] = [{n}, {n}] for inputs with {n} "
            f"positions; received context_mask of shape {list(layer.context_mask.shape)}."
        )


def check_map(layer, spatial, n) -> list:
    """The input map fits what the layer was built for: the context mask's positions and a
    global context's embedding range. Sides known when traced (ints) are checked now
    (``ValueError``); sides known only when the graph runs (tensors) then
    (``InvalidArgumentError`` naming the layer, what it covers and the map received);
    unknown sides at build time (``None``) are skipped.

    Returns:
        The run-time assertions, for the computation to depend on.
    """
    checks = []
    if layer.context_mask is not None:
        check_context_mask_size(layer, n)
        if is_dynamic(n):
            size = layer.context_mask.shape[0]
            checks.append(
                _assert_when_run(
                    layer,
                    ops.equal(n, size),
                    f"its context_mask covers maps of {size} positions (shape [{size}, {size}])",
                    spatial,
                )
            )
    if layer.position and layer.scope_size is None:
        checks += check_global_range(layer, spatial)
    return checks


def check_global_range(layer, spatial) -> list:
    """A global context's embeddings must cover the map (see
    [`check_map`][lambda_keras.layers.lambda_checks.check_map])."""
    extent = layer.position_embedding.max_extent
    checks = []
    for axis, (s, e) in enumerate(zip(spatial, extent, strict=True)):
        if isinstance(s, (int, np.integer)) and s > e:
            raise ValueError(
                f"Global context: the relative embeddings cover maps up to {extent} but the "
                f"inputs have spatial shape {tuple(spatial)} (axis {axis}: {s} > {e}). Build "
                "the layer with a larger `max_size`, or use a local `scope_size`."
            )
        if is_dynamic(s):
            checks.append(
                _assert_when_run(
                    layer,
                    ops.less_equal(s, e),
                    f"the relative embeddings of its global context cover maps up to "
                    f"{extent} (build it with a larger max_size)",
                    spatial,
                )
            )
    return checks


def _assert_when_run(layer, condition, covers: str, spatial):
    return assert_when_run(
        condition,
        f"LambdaLayer {layer.name}: {covers}; received an input map of spatial shape",
        spatial,
    )


def check_input_rank(input_shape) -> int:
    """The input's number of spatial axes: 1 for `[batch, length, channels]`, 2 for
    `[batch, height, width, channels]`; a `ValueError` naming the shape for any other rank."""
    if len(input_shape) not in (3, 4):
        raise ValueError(
            "LambdaLayer `inputs` must have rank 3 ([batch, length, channels]) or rank 4 "
            f"([batch, height, width, channels]); received input shape {tuple(input_shape)} "
            f"(rank {len(input_shape)})."
        )
    return len(input_shape) - 2


def check_input_sides(input_shape) -> None:
    """Every known side of the map and its channels at least 1 (an empty batch is allowed): a
    `ValueError` naming the shape, where a map of no positions or no channels failed deep in
    a convolution or the initializers."""
    if any(isinstance(side, (int, np.integer)) and side < 1 for side in input_shape[1:]):
        raise ValueError(
            "LambdaLayer `inputs` must have at least one position along each spatial axis and "
            f"at least one channel (the batch may be empty); received input shape "
            f"{tuple(input_shape)}."
        )


# Position embeddings larger than this many elements (1 GiB in float32) are refused up front
# instead of failing with an out-of-memory error after seconds of allocation.
MAX_EMBEDDING_ELEMENTS = 2**28
"""The most elements a dense relative-position embedding `E[k, n, m]` may have before the layer
refuses the map size (use a local scope or `conv`)."""


def check_embedding_size(name: str, window: tuple[int, ...], per_offset: int) -> None:
    """Refuse embeddings of more than ``MAX_EMBEDDING_ELEMENTS`` before allocating them."""
    elements = int(np.prod(window)) * per_offset
    if elements > MAX_EMBEDDING_ELEMENTS:
        raise ValueError(
            f"`{name}` gives a window of {window} offsets, which needs relative position "
            f"embeddings of {elements:,} elements (more than {MAX_EMBEDDING_ELEMENTS:,}, 1 GiB "
            "in float32); a scope wider than twice the feature map is never used: pass a "
            "smaller one."
        )
