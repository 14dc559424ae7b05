"""The timm-ports benchmark prints its table (needs PyTorch and timm; slow)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "bench_timm_ports.py"


@pytest.mark.slow
@pytest.mark.torch("timm")
def test_bench_timm_ports_prints_a_row_per_model():
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--models=lambda_resnet26t", "--batch=1", "--repeats=1"]
        + ["--implementations=auto,conv"],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONPATH": str(ROOT)},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    rows = [line for line in result.stdout.splitlines() if line.startswith("| lambda_resnet26t")]
    assert len(rows) == 1
    speeds = [float(cell) for cell in rows[0].strip("|").split("|")[1:]]
    assert len(speeds) == 3 and all(speed > 0 for speed in speeds)
