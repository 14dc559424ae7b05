"""The page faults of one call (benchmarks/timing.py): memory touched for the first time is
counted, and the count is a whole number."""

import mmap
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
from timing import page_faults  # noqa: E402

sys.path.remove(str(BENCHMARKS))


def touch_fresh_memory(size: int = 16 * 2**20) -> None:
    """Writes one byte per page of a new anonymous mapping (from the operating system, not the
    allocator: in a long test process glibc may serve even a large buffer from memory it has
    touched already, and then nothing faults)."""
    with mmap.mmap(-1, size) as memory:
        for offset in range(0, size, mmap.PAGESIZE):
            memory[offset] = 1


def test_touching_fresh_memory_counts_page_faults():
    faults = page_faults(touch_fresh_memory)
    assert isinstance(faults, int) and faults > 0
    assert page_faults(lambda: None) >= 0
