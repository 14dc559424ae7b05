"""The layer benchmark times every implementation on each backend in its own process and prints
one table with ``auto``'s choice and its distance from the fastest."""

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
SCRIPT = BENCHMARKS / "bench_layers.py"
BACKENDS = ["tensorflow", "jax"]
sys.path.insert(0, str(BENCHMARKS))
import bench_layers  # noqa: E402

sys.path.remove(str(BENCHMARKS))


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


def test_implementations_of_one_shape_are_timed_in_turn(monkeypatch):
    calls = []
    clock = iter(range(100))
    monkeypatch.setattr(bench_layers.time, "perf_counter", lambda: next(clock))
    runs = {"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}
    timed = bench_layers.timed_in_turn(runs, repeats=3, max_seconds=10)
    assert calls == ["a", "b"] + ["a", "b"] * 3  # warm-ups, then rounds of one call each
    assert timed == {"a": (1000.0, False), "b": (1000.0, False)}  # each call one tick
    slow = bench_layers.timed_in_turn(runs, repeats=2, max_seconds=0.5)
    assert slow == {"a": (1000.0, True), "b": (1000.0, True)}  # warm-up over the limit: one run


def test_cells_group_by_shape_and_ratio_rules_score_against_the_faster():
    cell = {"stage": "sweep", "side": 7, "channels": 256, "scope": 3}
    cells_ = [{**cell, "impl": "einsum"}, {**cell, "impl": "conv"}, {**cell, "side": 10}]
    assert bench_layers.shape_groups(cells_) == [cells_[:2], cells_[2:]]
    args = argparse.Namespace(sweep_sides=[7, 10], sweep_scopes=[3])
    table = {
        (7, 3, "einsum"): {"ms": 2.0},  # n / window 49 / 9 = 5.4
        (7, 3, "conv"): {"ms": 4.0},
        (10, 3, "einsum"): {"ms": 9.0},  # 100 / 9 = 11.1
        (10, 3, "conv"): {"ms": 3.0},
    }
    assert bench_layers.ratio_losses(table, args, 4) == [2.0, 1.0]  # conv at both
    assert bench_layers.ratio_losses(table, args, 8) == [1.0, 1.0]  # einsum at 7x7 only
    assert bench_layers.ratio_losses(table, args, 16) == [1.0, 3.0]
    assert bench_layers.best_ratio(table, args) == "8 (1.00)"


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
def test_the_sweep_scores_auto_and_each_ratio_rule(tmp_path):
    output = tmp_path / "sweep.json"
    out = run(
        "--sweep",
        "--backends=tensorflow",
        "--sweep-sides=7,10",
        "--sweep-scopes=3,5",
        "--sweep-batches=2,4",
        "--repeats=1",
        f"--output={output}",
    )
    rows = [cells(line) for line in out.splitlines() if re.match(r"\| \d+x\d+ \|", line)]
    assert len(rows) == 2 * 2 * 2  # batches x map sides x scopes
    assert all(row[6] in ("einsum", "conv") and float(row[7]) >= 1.0 for row in rows)
    rules = [cells(line) for line in out.splitlines() if re.match(r"\| [\d.]+ \| \d", line)]
    assert [float(r[0]) for r in rules] == [1, 1.5, 2, 4, 8, 16, 32, 64, 96, 128] * 2
    assert all(float(r[1]) >= float(r[2]) >= 1.0 for r in rules)
    assert re.search(r"- tensorflow, batch 2: worst \d\.\d\d over 4 cells: (met|NOT met)", out)
    tables = json.loads(output.read_text())["tables"]
    assert sorted(tables) == ["sweep_summary", "sweep_tensorflow_b2", "sweep_tensorflow_b4"]
    summary = tables["sweep_summary"]["rows"]
    assert [(r[0], r[1], r[2], r[3]) for r in summary] == [
        ("tensorflow", 2, "4", 4),
        ("tensorflow", 4, "4", 4),
    ]
    for row in tables["sweep_tensorflow_b2"]["rows"]:
        einsum, conv, auto, loss = row[4:]
        assert loss == pytest.approx({"einsum": einsum, "conv": conv}[auto] / min(einsum, conv))
