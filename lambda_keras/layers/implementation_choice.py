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
# whether TensorFlow runs oneDNN: each is the ratio of `benchmarks/bench_layers.py --sweep
# --backends=...` (2 cores, batch 32, d=256, forward+backward, 7x7...28x28 maps, 3x3...23x23
# scopes) whose rule lands nearest the faster of einsum and conv (docs/layers.md, "Three
# implementations"). AVX2 AMD EPYC, TensorFlow 2.21, jax 0.10.2, torch 2.14.1:
# - TensorFlow with oneDNN: 4, exact on AVX-512 (the sweep of an earlier round); on AVX2 with
#   oneDNN switched on, 4 is within 1.56x everywhere and 1.04x on average (2: 1.22x, 1.01x).
# - TensorFlow without oneDNN (TF_ENABLE_ONEDNN_OPTS=0; TensorFlow's default on AVX2): 32, exact.
# - JAX (XLA's slow 3-D convolutions on a CPU): 32, within 1.19x everywhere (64 is exact there,
#   but lets the einsum, whose memory grows with n * n, onto twice larger maps).
# - PyTorch: 4, exact.
CPU_EINSUM_MAX_POSITIONS_PER_WINDOW = {
    "tensorflow": 4,
    "tensorflow_without_onednn": 32,
    "jax": 32,
    "torch": 4,
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
      Keras backend and CPU (TensorFlow with oneDNN 4; without 32; JAX 32: XLA's 3-D
      convolutions on a CPU are slow; PyTorch 4).

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
