"""The layer benchmark runs and prints a row for every shape, scope and implementation."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_layers.py"


@pytest.mark.slow
def test_bench_layers_prints_the_table():
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--no-timm", "--skip-memory"],
        capture_output=True,
        text=True,
        timeout=1800,
        env=env,
        check=True,
    )
    rows = [line for line in result.stdout.splitlines() if line.startswith("| c")]
    assert len(rows) == 2 * 3 * 4  # stages x scopes x implementations
    assert sum("auto (" in row for row in rows) == 6
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert float(cells[5]) > 0 and float(cells[6]) > 0
