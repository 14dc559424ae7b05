"""The detection ops benchmark prints a row per op with a time for every column (slow); bad
arguments: test_bad_arguments.py."""

import subprocess
import sys
from pathlib import Path

import pytest

from tests.backend import child_env

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_detection_ops.py"


@pytest.mark.slow
def test_bench_detection_ops_prints_every_op_on_every_backend():
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--backends=tensorflow,jax", "--boxes=300", "--repeats=1"],
        capture_output=True,
        text=True,
        timeout=1800,
        env=child_env(),
    )
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.splitlines()
    header = next(line for line in lines if line.startswith("| op |"))
    columns = [c.strip() for c in header.strip("|").split("|")][1:]
    assert columns[:2] == ["tensorflow", "jax"] and "tf.image" in columns
    rows = {line.split("|")[1].strip(): line for line in lines if line.startswith("| ")}
    ops = ("nms 300", "greedy_nms 300", "batched_nms 300", "roi_align 1000", "mask_head_conv 100")
    for op in ops:
        cells = [c.strip() for c in rows[op].strip("|").split("|")[1:]]
        assert all(float(cells[i]) > 0 for i in (0, 1)), rows[op]
