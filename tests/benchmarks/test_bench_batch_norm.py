"""Batch norm on PyTorch, Keras' formula against PyTorch's kernels, compiled and eager
(benchmarks/bench_batch_norm.py): one row per map with both times, their ratio and the path the
layer takes by default, and a bad map refused by name (the sentence: test_summaries.py)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_batch_norm.py"), *args],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONPATH": str(ROOT)},
    )  # fmt: skip


@pytest.mark.torch  # PyTorch and Inductor (a few seconds of compiling)
def test_each_map_gets_both_times_and_the_default_path(tmp_path):
    output = tmp_path / "batch_norm.json"
    done = run("--maps=2x4x4x8,1x6x5x3", "--repeats=2", f"--output={output}")
    assert done.returncode == 0, done.stderr[-2000:]
    table = json.loads(output.read_text())["tables"]["batch_norm"]
    assert [row[:2] for row in table["rows"]] == [["2x4x4x8", 256], ["1x6x5x3", 90]]
    for _, _, formula, kernels, ratio, default in table["rows"]:
        assert formula > 0 and kernels > 0
        assert ratio == pytest.approx(kernels / formula)
        assert default == "Keras' formula"  # far below MIN_VALUES


@pytest.mark.torch
def test_eagerly_every_map_takes_the_kernels_by_default(tmp_path):
    output = tmp_path / "batch_norm_eager.json"
    done = run("--mode=eager", "--maps=2x4x4x8,1x6x5x3", "--repeats=2", f"--output={output}")
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(output.read_text())
    assert result["settings"]["mode"] == "eager"
    table = result["tables"]["batch_norm_eager"]
    assert "eagerly" in table["title"]
    assert [row[:2] for row in table["rows"]] == [["2x4x4x8", 256], ["1x6x5x3", 90]]
    for _, _, formula, kernels, ratio, default in table["rows"]:
        assert formula > 0 and kernels > 0
        assert ratio == pytest.approx(kernels / formula)
        assert default == "PyTorch's kernels"


def test_a_map_that_is_not_four_sizes_is_refused_by_name():
    done = run("--maps=8x56x56", "--repeats=1")
    assert done.returncode != 0
    assert "four positive integers such as 8x56x56x64; received '8x56x56'" in done.stderr
