"""The main-job benchmark runs the training script and prints its table (slow)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_main_job.py"


@pytest.mark.slow
def test_bench_main_job_prints_a_row_per_model():
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--models", "lambda_resnet50", "--epochs", "1"],
        capture_output=True,
        text=True,
        timeout=900,
        check=True,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
    )
    rows = [line for line in result.stdout.splitlines() if "| lambda_resnet50 |" in line]
    assert [row.split("|")[1].strip() for row in rows] == ["tensorflow", "jax"]
    for row in rows:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert cells[2] == "1,146,450" and 0 <= float(cells[3].rstrip("%")) <= 100
        assert int(cells[4]) > 0 and float(cells[5]) >= int(cells[4])
