"""The training benchmark runs and prints its table."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_train.py"


@pytest.mark.slow
def test_bench_train_prints_the_table():
    result = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--batch",
            "2",
            "--steps",
            "1",
            "--no-xla",
            "--models",
            "lambda_resnet50",
        ],
        capture_output=True,
        text=True,
        timeout=1800,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
        check=True,
    )
    rows = [line for line in result.stdout.splitlines() if line.startswith("| lambda_resnet50")]
    assert len(rows) == 2  # float32 and bfloat16
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert float(cells[3]) > 0 and float(cells[4]) > 0
    assert "input pipeline" in result.stdout
