"""The timing rule every benchmark script uses: warm-up runs, then the median wall time; for
PyTorch's own models (timm's, torchvision's), the device and a step that waits for it; and the
page faults of one call."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def median_seconds(fn: Callable[[], object], repeats: int, warmups: int = 2) -> float:
    """Call ``fn`` ``warmups`` times (tracing, caches), then the median of ``repeats`` timed
    calls, in seconds."""
    for _ in range(warmups):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def torch_device() -> str:
    """Where PyTorch's own models compute: the GPU where there is one, as Keras' do."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def wait_for_device() -> None:
    """Return when PyTorch's GPU has finished its queued work (CUDA computes asynchronously);
    at once without one."""
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def synchronized(step: Callable[[], object]) -> Callable[[], None]:
    """``step`` returning when the device has finished it."""

    def run() -> None:
        step()
        wait_for_device()

    return run


def page_faults(fn: Callable[[], object]) -> int | None:
    """The minor page faults of one call of ``fn`` (``getrusage``): the memory it touches for the
    first time since the operating system mapped it, which the C library's allocator does anew
    for large buffers freed and allocated again. None where ``resource`` is missing (Windows)."""
    try:
        import resource
    except ImportError:
        return None
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    fn()
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
