"""glibc's allocator on a CPU: the buffers a compiled step or `detect` frees kept in the heap.

A step compiled by Inductor allocates its buffers anew at every call and frees them before it
returns; Keras' and timm's eager steps free and reallocate one tensor at a time. glibc maps a
buffer above its mmap threshold from the operating system and unmaps it when it is freed (the
threshold starts at 128 KiB and rises to the size of each mapped buffer freed, up to 32 MiB),
and gives the free memory at the top of its heap back above its trim threshold (twice the
mmap threshold once that has risen). A compiled step frees most of its memory at once, so glibc
gives it back, and the next step touches every page of it for the first time again: one minor
page fault per page. The compiled training step of the port of timm's LambdaResNet-50 (batch 8,
224 px, 2 CPU cores) had about 180,000 page faults a step where timm's and Keras' eager steps
had a handful, and trained slower than timm (the benchmarks page, "PyTorch: compiled steps
against timm"). A Mask R-CNN's call on a photo is the same at a larger scale: its feature maps
are above 32 MiB, the largest mmap threshold, so glibc maps them anew at a photo unless a free
part of its heap holds them (the benchmarks page counts the page faults of `detect` and
torchvision per photo).

[`keep_buffers_in_heap`][lambda_keras.backend.glibc_heap.keep_buffers_in_heap], called by each
step compiled for a CPU and by [`detect`][lambda_keras.detection.detect] on a CPU on JAX and
PyTorch, sets two of glibc's settings with ``mallopt``, once, for the whole process: no buffer
is mapped apart from the heap ([`MMAP_MAX`][lambda_keras.backend.glibc_heap.MMAP_MAX]), and
the heap keeps up to [`TRIM_THRESHOLD`][lambda_keras.backend.glibc_heap.TRIM_THRESHOLD] of free
memory for the next call, as PyTorch's caching allocator keeps a GPU's memory and TensorFlow's
allocator keeps a CPU's. The process's resident memory then stays near its peak, where glibc
would have returned some of it.

What these settings cannot reach: the threads' own arenas' large buffers. glibc gives a thread
that allocates an arena of its own, whose heaps hold up to 64 MiB; it maps a larger buffer apart
whatever ``M_MMAP_MAX`` says, and unmaps a heap of the arena that empties (a top pad of 64 MiB,
which should keep such heaps, did not change the count on JAX). JAX's compiled programs
allocate their scratch memory on XLA's threads (one buffer of about 850 MiB per call for a Mask
R-CNN on an 832 x 1216 canvas, seen in a debugger), so on JAX these settings take away between
a fifth and a third of `detect`'s page faults. glibc's variables set before the process starts
(``MALLOC_ARENA_MAX=1``: one arena for every thread) take away the rest; the backends page says
how. A ``mallopt`` of ``M_ARENA_MAX`` once the threads have their arenas changes nothing.

The cost: the process keeps the memory it freed. With no buffer mapped apart, glibc returns
memory only from the top of its heap, above the trim threshold: a large buffer freed below a
block still in use stays with the process (``malloc_trim(0)`` from ``ctypes`` asks glibc to
give back what it can).

The user's choice wins: nothing is set where ``LAMBDA_KERAS_GLIBC_HEAP=0``, or where the
environment sets glibc's own variables for these settings (``MALLOC_MMAP_THRESHOLD_``,
``MALLOC_TRIM_THRESHOLD_``, ``MALLOC_TOP_PAD_``, ``MALLOC_MMAP_MAX_``, or the same settings as
``glibc.malloc`` tunables in ``GLIBC_TUNABLES``). Nothing is set either where the C library is
not glibc (macOS, Windows, musl) or where another allocator serves ``malloc`` (jemalloc or
tcmalloc preloaded). This module imports neither Keras nor PyTorch.
"""

from __future__ import annotations

import ctypes
import os
import platform
from collections.abc import Callable, Mapping

from lambda_keras.backend.switches import read_switch

__all__ = [
    "GLIBC_TUNABLES", "GLIBC_VARIABLES", "MMAP_MAX", "TRIM_THRESHOLD", "VARIABLE", "applied",
    "glibc_serves_malloc", "keep_buffers_in_heap",
]

VARIABLE = "LAMBDA_KERAS_GLIBC_HEAP"
"""``0`` (or ``off``, ``false``) leaves glibc's settings as they are; unset or ``1`` (``on``,
``true``), a compiled step on a CPU and [`detect`][lambda_keras.detection.detect] on a CPU
(JAX, PyTorch) set them
([`keep_buffers_in_heap`][lambda_keras.backend.glibc_heap.keep_buffers_in_heap];
[`switches`][lambda_keras.backend.switches])."""

MMAP_MAX = 0
"""How many buffers glibc may map apart from its heap at once (``M_MMAP_MAX``): none, so that
every buffer of the main arena comes from the heap, whatever its size (glibc still maps one
where the heap cannot grow)."""

TRIM_THRESHOLD = 2**31 - 1
"""Bytes of free memory at the top of its heap that glibc keeps instead of giving them back
(``M_TRIM_THRESHOLD``): 2 GiB, a cap chosen so that a process whose steps once needed more
returns the rest at the heap's top (``-1`` would never trim)."""

GLIBC_VARIABLES = (
    "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_",
)
"""glibc's own environment variables for these settings: where one is set, the user chose."""

GLIBC_TUNABLES = tuple(
    f"glibc.malloc.{name}" for name in ("mmap_threshold", "trim_threshold", "top_pad", "mmap_max")
)
"""The same settings as ``GLIBC_TUNABLES`` names them (``name=value`` pairs joined by ``:``)."""

_SETTINGS = {"M_MMAP_MAX": (-4, MMAP_MAX), "M_TRIM_THRESHOLD": (-1, TRIM_THRESHOLD)}
"""Each setting by its name in ``<malloc.h>``: its code there and the value set."""
_applied: dict[str, int] | None = None


def keep_buffers_in_heap(
    environ: Mapping[str, str] = os.environ,
    mallopt: Callable[[int, int], int] | None = None,
    libc: str | None = None,
) -> bool:
    """Sets glibc's most mapped buffers to
    [`MMAP_MAX`][lambda_keras.backend.glibc_heap.MMAP_MAX] and its trim threshold to
    [`TRIM_THRESHOLD`][lambda_keras.backend.glibc_heap.TRIM_THRESHOLD], once per process,
    unless ``LAMBDA_KERAS_GLIBC_HEAP=0``, glibc's own variables are in ``environ``, the C
    library is not glibc, or another allocator serves ``malloc``.

    Args:
        environ: The environment to read (the process's).
        mallopt: The C library's ``mallopt`` (for tests); by default glibc's, where glibc serves
            the process's ``malloc``.
        libc: The C library's name as ``platform.libc_ver`` gives it (for tests).

    Returns:
        Whether the settings are this module's (set now or by an earlier call).

    Raises:
        ValueError: ``LAMBDA_KERAS_GLIBC_HEAP`` holds something other than an on or off value
            ([`switches`][lambda_keras.backend.switches]).
    """
    global _applied
    on = read_switch(
        environ, VARIABLE, "1",
        "1 (keep the buffers of a compiled step and of detect on a CPU in glibc's heap, the "
        "default) or 0 (leave glibc's settings alone)",
    )
    if _applied is not None:
        return True
    if not on or _user_set(environ):
        return False
    if (platform.libc_ver()[0] if libc is None else libc) != "glibc":
        return False
    if mallopt is None:
        mallopt = _glibc_mallopt()
        if mallopt is None:
            return False
    # mallopt returns 1 on success, 0 where it refuses a value.
    if not all(mallopt(code, value) == 1 for code, value in _SETTINGS.values()):
        return False
    _applied = {name: value for name, (_, value) in _SETTINGS.items()}
    return True


def applied() -> dict[str, int] | None:
    """The settings [`keep_buffers_in_heap`][lambda_keras.backend.glibc_heap.keep_buffers_in_heap]
    made in this process (``{"M_MMAP_MAX": buffers, "M_TRIM_THRESHOLD": bytes}``), or None."""
    return None if _applied is None else dict(_applied)


def _user_set(environ: Mapping[str, str]) -> bool:
    tunables = {
        pair.partition("=")[0].strip() for pair in environ.get("GLIBC_TUNABLES", "").split(":")
    }
    return any(name in environ for name in GLIBC_VARIABLES) or bool(
        tunables.intersection(GLIBC_TUNABLES)
    )


def glibc_serves_malloc() -> bool:
    """Whether the process's ``malloc`` is glibc's: False where another allocator serves it
    (jemalloc or tcmalloc preloaded) or the C library is not glibc's ``libc.so.6``."""
    return _glibc_mallopt() is not None


def _glibc_mallopt() -> Callable[[int, int], int] | None:
    """glibc's ``mallopt``, or None where the process's ``malloc`` is another allocator's
    (jemalloc or tcmalloc preloaded: tcmalloc's ``mallopt`` does nothing and says it did) or
    the C library cannot be opened."""
    try:
        process, glibc = ctypes.CDLL(None), ctypes.CDLL("libc.so.6")
        address = ctypes.cast(process.malloc, ctypes.c_void_p).value
        if address != ctypes.cast(glibc.malloc, ctypes.c_void_p).value:
            return None
        return glibc.mallopt
    except (OSError, AttributeError):
        return None
