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
            "--backends",
            "tensorflow",
            "jax",
        ],
        capture_output=True,
        text=True,
        timeout=1800,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
        check=True,
    )
    rows = [line for line in result.stdout.splitlines() if "| lambda_resnet50 |" in line]
    # float32 and bfloat16, each on every backend before the next, each row in its own process
    # (JAX: XLA always).
    cells = [[c.strip() for c in row.strip("|").split("|")] for row in rows]
    assert [(c[0], c[2], c[3]) for c in cells] == [
        ("tensorflow", "float32", "off"),
        ("jax", "float32", "on"),
        ("tensorflow", "bfloat16", "off"),
        ("jax", "bfloat16", "on"),
    ]
    for c in cells:
        assert float(c[4]) > 0 and float(c[5]) > 0 and float(c[6]) > 0  # img/s, first step
    assert "input pipeline" in result.stdout
