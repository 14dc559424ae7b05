"""Which implementation of the lambda layer's position lambdas runs (``implementation="auto"``):
the one module of the layers that knows backends and devices.

The break-evens below were set by ``benchmarks/bench_layers.py --sweep --backends=...`` (its
results and docs/layers.md, "Three implementations").
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from lambda_keras import _validation as v
from lambda_keras.backend import devices

__all__ = [
    "ACCELERATOR_EINSUM_MAX_POSITIONS",
    "CPU_EINSUM_MAX_POSITIONS_PER_WINDOW",
    "IMPLEMENTATIONS",
    "choose_implementation",
    "cpu_ratio",
    "num_positions",
]

IMPLEMENTATIONS = ("auto", "einsum", "conv", "depthwise")
"""The values of `implementation=`: `auto` chooses one of the other three."""
# `implementation="auto"`. The einsum computes position lambdas against every position of the map
# (zeroed embeddings outside the scope): its cost grows with n * n. The lambda convolution's grows
# with n * window, the window being the scope cropped to the map (2L - 1 per axis). On a CPU the
# einsum is the faster one while n <= ratio * window, the ratio depending on the backend, on
# whether TensorFlow runs oneDNN and, on PyTorch, on the batch (the dense embeddings' cost is the
# same for every batch, so a larger batch spreads it over more images). Each ratio comes from
# `benchmarks/bench_layers.py --sweep --sweep-batches=8,32` (2 cores, d=256, forward+backward,
# einsum and conv timed in turn, 7x7...28x28 maps, 3x3...23x23 scopes;
# benchmarks/results/layers_sweep.json, docs/layers.md "Three implementations"). AVX-512 AMD
# EPYC, TensorFlow 2.21, jax 0.10.2, torch 2.14.1, Keras 3.15.1:
# - TensorFlow with oneDNN: 4 at both batches (break-even between 4 and 6.5 x window).
# - TensorFlow without oneDNN (TF_ENABLE_ONEDNN_OPTS=0; TensorFlow's default on AVX2): 32, exact in
#   the sweep of an earlier round (AVX2 AMD EPYC, batch 32), not measured again.
# - JAX: 96 at both batches. XLA's CPU 3-D convolution is slow; the einsum is faster everywhere up
#   to 28x28, and at batch 8 the break-even lies near 125 x window for 3x3 and 5x5 scopes (40x40
#   and 56x56 maps, `--sweep-sides=40,56`) and above 64 x window for 7x7.
# - PyTorch: 1.5 at batch 8, 2 at batch 32 (break-even near 1.6 and 2 x window; 4, set on an AVX2
#   CPU before Keras' PyTorch convolutions changed, chose einsum at 1.5x conv's time).
CPU_EINSUM_MAX_POSITIONS_PER_WINDOW: dict[str, dict[int, float]] = {
    "tensorflow": {8: 4, 32: 4},
    "tensorflow_without_onednn": {32: 32},
    "jax": {8: 96, 32: 96},
    "torch": {8: 1.5, 32: 2},
}
"""On a CPU, `auto` picks `einsum` when the map holds at most this many times the positions of
the scope window: per CPU kind (`backend.devices.cpu_kind`), the ratio measured at each batch
(`benchmarks/bench_layers.py --sweep --sweep-batches=8,32`). A batch uses the ratio of the
largest measured batch not above it (the smallest's below them all); an unknown batch the
largest's."""
# On a GPU/TPU the paper's rule (Appendix F.2): einsum for |n| <= 852 and |u| = 1, else conv.
ACCELERATOR_EINSUM_MAX_POSITIONS = 852
"""On a GPU or TPU, `auto` picks `einsum` for maps of at most this many positions (and
`intra_depth` 1), the paper's rule (Appendix F.2)."""


def choose_implementation(
    implementation: str,
    spatial_shape: Sequence[int | None],
    *,
    scope_size,
    intra_depth: int,
    masked: bool,
    batch: int | None = None,
) -> str:
    """The implementation a layer with these settings uses for inputs of ``spatial_shape``
    (``masked``: it has a ``context_mask``) and ``batch`` images (None: unknown).

    ``"auto"`` resolves to:

    * ``"einsum"`` with a ``context_mask`` (the only implementation that supports one)
      and for a global context (its convolution window would be ~4x the map);
    * ``"conv"`` for a local scope on a map of unknown size;
    * on a GPU/TPU host, the paper's rule: ``"einsum"`` when the map holds at most 852
      positions and ``intra_depth == 1``, else ``"conv"``;
    * on a CPU-only host, ``"einsum"`` when the map holds at most
      ``CPU_EINSUM_MAX_POSITIONS_PER_WINDOW[backend]`` times as many positions as the
      scope window (cropped to the map), else ``"conv"`` — the break-even measured on each
      Keras backend and CPU at batch 8 and 32 (TensorFlow with oneDNN 4; without 32; JAX 96:
      XLA's 3-D convolutions on a CPU are slow; PyTorch 1.5 at batch 8, 2 from batch 32);
      see [`cpu_ratio`][lambda_keras.layers.implementation_choice.cpu_ratio].

    ``"depthwise"`` is never chosen: it was the slowest in every CPU measurement here.
    """
    if implementation != "auto":
        return implementation
    if masked or scope_size is None:
        return "einsum"
    n = num_positions(spatial_shape)
    if n is None:
        return "conv"
    if devices.has_accelerator():
        ok = n <= ACCELERATOR_EINSUM_MAX_POSITIONS and intra_depth == 1
        return "einsum" if ok else "conv"
    scope = v.odd_window("scope_size", scope_size, len(spatial_shape))
    window = int(np.prod([min(r, 2 * s - 1) for r, s in zip(scope, spatial_shape, strict=True)]))
    return "einsum" if n <= cpu_ratio(batch) * window else "conv"


def cpu_ratio(batch: int | None = None, kind: str | None = None) -> float:
    """How many times the scope window's positions a map may hold for ``auto`` to pick
    ``"einsum"`` on a CPU of ``kind`` (default: this process's,
    [`cpu_kind`][lambda_keras.backend.devices.cpu_kind]) at ``batch`` images (None: unknown):
    the ratio of the largest measured batch not above ``batch`` (the smallest measured batch's
    below them all), the largest's for an unknown batch (TensorFlow graphs of any batch)."""
    by_batch = CPU_EINSUM_MAX_POSITIONS_PER_WINDOW.get(kind or devices.cpu_kind(), {32: 4})
    measured = sorted(by_batch)
    if batch is None:
        return by_batch[measured[-1]]
    below = [b for b in measured if b <= batch]
    return by_batch[below[-1] if below else measured[0]]


def num_positions(spatial) -> int | None:
    """The number of positions of a map, None when a side is unknown."""
    if any(s is None for s in spatial):
        return None
    return int(np.prod(spatial))
