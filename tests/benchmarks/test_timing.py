"""The page faults of one call (benchmarks/timing.py): memory touched for the first time is
counted, and the count is a whole number."""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from timing import page_faults  # noqa: E402


def test_touching_fresh_memory_counts_page_faults():
    size = 64 * 2**20 // 8  # 64 MiB of float64, mapped anew by the allocator
    faults = page_faults(lambda: np.ones(size).sum())
    assert isinstance(faults, int) and faults > 0
    assert page_faults(lambda: None) >= 0
