"""The timing rule every benchmark script uses: warm-up runs, then the median wall time."""

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
