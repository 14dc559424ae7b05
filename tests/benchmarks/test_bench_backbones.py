"""The backbone benchmark prints one row per backbone and oneDNN setting with positive time and
memory."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "bench_backbones.py"


@pytest.mark.slow  # like every benchmark script's run (28 s); its arguments: test_bad_arguments
def test_bench_backbones_prints_a_row_per_model():
    result = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--size=64",
            "--models=resnet_rs50",
            "--repeats=1",
            "--onednn=on,off",
        ],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONPATH": str(ROOT)},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    rows = [line for line in result.stdout.splitlines() if line.startswith("| resnet_rs50 ")]
    assert len(rows) == 2, result.stdout
    for row, onednn in zip(rows, ["on", "off"], strict=True):
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert cells[1] == onednn  # as TensorFlow reports it in the child
        params, seconds, peak = (float(cell) for cell in cells[2:])
        assert params > 20 and seconds > 0 and peak > 0


def test_bench_backbones_refuses_a_size_not_divisible_by_32():
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--size=100"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert result.returncode == 2 and "--size must be a multiple of 32" in result.stderr
