"""The layer benchmark times every implementation on each backend in its own process and prints
one table with ``auto``'s choice and its distance from the fastest."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_layers.py"
BACKENDS = ["tensorflow", "jax"]


def run(*arguments: str) -> str:
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--no-timm", "--skip-memory", *arguments],
        capture_output=True,
        text=True,
        timeout=3600,
        env=env,
        check=True,
    )
    return result.stdout


def cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


@pytest.mark.slow
def test_bench_layers_prints_one_table_for_every_backend():
    out = run("--backends=" + ",".join(BACKENDS), "--max-seconds=5")
    rows = [cells(line) for line in out.splitlines() if line.startswith("| c")]
    assert len(rows) == 2 * 3 * 5  # stages x scopes x (3 implementations, auto, choice / fastest)
    number = r"[\d,]+\.\d\*?"
    for row in rows:
        values = row[3:]
        assert len(values) == len(BACKENDS), row
        if row[2] in ("einsum", "conv", "depthwise"):
            assert all(re.fullmatch(number, v) for v in values), row
        elif row[2].startswith("auto's choice /"):
            assert all(re.fullmatch(r"\d+\.\d\d \((einsum|conv|depthwise)\)", v) for v in values)
        else:
            assert all(re.fullmatch(number + r" \((einsum|conv)\)", v) for v in values), row
    for backend in BACKENDS:
        assert re.search(rf"- {backend}: worst choice / fastest \d+\.\d\d over 6 shapes", out)
    assert len(re.findall(r"- c4 .*: JAX \w+ [\d,.]+ ms, tensorflow \w+ [\d,.]+ ms", out)) == 3


@pytest.mark.slow
def test_the_sweep_scores_each_ratio_rule():
    out = run("--sweep", "--backends=tensorflow")
    rows = [cells(line) for line in out.splitlines() if re.match(r"\| \d+x\d+ \|", line)]
    assert len(rows) == 5 * 4  # map sides x scopes
    assert all(row[-1] in ("einsum", "conv") for row in rows)
    rules = [cells(line) for line in out.splitlines() if re.match(r"\| \d+ \| \d", line)]
    assert [int(r[0]) for r in rules] == [1, 2, 4, 8, 16, 32, 64]
    assert all(float(r[1]) >= float(r[2]) >= 1.0 for r in rules)
