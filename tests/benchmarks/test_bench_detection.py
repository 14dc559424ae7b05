"""The detection benchmark prints its rows (slow); bad sizes: test_bad_arguments.py."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "bench_detection.py"
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONPATH": str(ROOT)}


@pytest.mark.slow
def test_bench_detection_prints_a_row_per_model():
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--sizes=128", "--backbones=resnet_rs50", "--repeats=1"],
        capture_output=True,
        text=True,
        timeout=1800,
        env=ENV,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    rows = [line for line in result.stdout.splitlines() if "| 128 |" in line]
    assert rows and rows[0].startswith("| lambda_keras MaskRCNN, resnet_rs50 | 128 |")
    speed, step = (float(cell) for cell in rows[0].strip("|").split("|")[2:4])
    assert speed > 0 and step > 0
