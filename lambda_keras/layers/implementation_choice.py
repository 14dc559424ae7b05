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
    "num_positions",
]

IMPLEMENTATIONS = ("auto", "einsum", "conv", "depthwise")
"""The values of `implementation=`: `auto` chooses one of the other three."""
# `implementation="auto"`. The einsum computes position lambdas against every position of the map
# (zeroed embeddings outside the scope): its cost grows with n * n. The lambda convolution's grows
# with n * window, the window being the scope cropped to the map (2L - 1 per axis). On a CPU the
# einsum is the faster one while n <= ratio * window, the ratio depending on the backend and on
# whether TensorFlow runs oneDNN. Each ratio comes from `benchmarks/bench_layers.py --sweep
# --sweep-batches=8,32` (2 cores, d=256, forward+backward, einsum and conv timed in turn,
# 7x7...28x28 maps, 3x3...23x23 scopes; benchmarks/results/layers_sweep.json, docs/layers.md
# "Three implementations").
# The batch does not move a break-even enough to matter: one ratio keeps every swept cell at
# batch 8 and at batch 32 within 1.1x of the faster implementation on each backend, so the rule
# has no batch term. AVX-512 AMD EPYC, TensorFlow 2.21, jax 0.10.2, torch 2.14.1, Keras 3.15.1:
# - TensorFlow with oneDNN: 4 (break-even between 4 and 6.5 x window).
# - TensorFlow without oneDNN (TF_ENABLE_ONEDNN_OPTS=0; TensorFlow's default on AVX2): 32, exact in
#   the sweep of an earlier round (AVX2 AMD EPYC), not measured again.
# - JAX: 96. XLA's CPU 3-D convolution is slow; the einsum is faster everywhere up to 28x28, and
#   at batch 8 the break-even lies near 125 x window for 3x3 and 5x5 scopes (40x40 and 56x56
#   maps, `--sweep-sides=40,56`) and above 64 x window for 7x7.
# - PyTorch: 2 (break-even between 1.5 and 2 x window at both batches; 4, set on an AVX2 CPU
#   before Keras' PyTorch convolutions changed, chose einsum at 1.5x conv's time).
CPU_EINSUM_MAX_POSITIONS_PER_WINDOW = {
    "tensorflow": 4,
    "tensorflow_without_onednn": 32,
    "jax": 96,
    "torch": 2,
}
"""On a CPU, `auto` picks `einsum` when the map holds at most this many times the positions of
the scope window, per CPU kind (`backend.devices.cpu_kind`); set from
`benchmarks/bench_layers.py --sweep`."""
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
) -> str:
    """The implementation a layer with these settings uses for inputs of ``spatial_shape``
    (``masked``: it has a ``context_mask``).

    ``"auto"`` resolves to:

    * ``"einsum"`` with a ``context_mask`` (the only implementation that supports one)
      and for a global context (its convolution window would be ~4x the map);
    * ``"conv"`` for a local scope on a map of unknown size;
    * on a GPU/TPU host, the paper's rule: ``"einsum"`` when the map holds at most 852
      positions and ``intra_depth == 1``, else ``"conv"``;
    * on a CPU-only host, ``"einsum"`` when the map holds at most
      ``CPU_EINSUM_MAX_POSITIONS_PER_WINDOW[backend]`` times as many positions as the
      scope window (cropped to the map), else ``"conv"`` — the break-even measured on each
      Keras backend and CPU (TensorFlow with oneDNN 4; without 32; JAX 96: XLA's 3-D
      convolutions on a CPU are slow; PyTorch 2), the same at batch 8 and 32.

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
    ratio = CPU_EINSUM_MAX_POSITIONS_PER_WINDOW.get(devices.cpu_kind(), 4)
    return "einsum" if n <= ratio * window else "conv"


def num_positions(spatial) -> int | None:
    """The number of positions of a map, None when a side is unknown."""
    if any(s is None for s in spatial):
        return None
    return int(np.prod(spatial))
