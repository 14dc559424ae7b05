"""The page faults of one call (benchmarks/timing.py): memory touched for the first time is
counted, and the count is a whole number."""

import sys
from pathlib import Path

import numpy as np

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
from timing import page_faults  # noqa: E402

sys.path.remove(str(BENCHMARKS))


def test_touching_fresh_memory_counts_page_faults():
    size = 64 * 2**20 // 8  # 64 MiB of float64, mapped anew by the allocator
    faults = page_faults(lambda: np.ones(size).sum())
    assert isinstance(faults, int) and faults > 0
    assert page_faults(lambda: None) >= 0
