"""The PyTorch steps benchmark prints timm's row and Keras' eager row with the ratio to timm and
writes their kernels with ``--profile`` (needs PyTorch and timm); the compiled row, which
compiles for minutes, under ``-m slow``."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "bench_torch_steps.py"


def run(tmp_path, *systems: str, options: tuple[str, ...] = ()) -> dict:
    output = tmp_path / "steps.json"
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--batch=2", "--size=32", "--steps=1", "--systems",
         *systems, f"--output={output}", *options],
        capture_output=True,
        text=True,
        timeout=1200,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONPATH": str(ROOT)},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(output.read_text())["tables"]["torch_steps"]


@pytest.mark.torch("timm")
def test_timm_and_keras_eager_rows_with_the_ratio_and_their_kernels(tmp_path):
    table = run(tmp_path, "timm", "eager", options=(f"--profile={tmp_path / 'kernels'}",))
    assert table["notes"] == []
    timm, eager = table["rows"]
    assert timm[:2] == ["lambda_resnet50ts", "timm"] and timm[4:6] == [1.0, 1.0]
    assert eager[1] == "eager" and eager[2] > 0 and eager[3] > 0
    assert eager[4] == pytest.approx(timm[2] / eager[2])  # step time as a multiple of timm's
    assert eager[8:] == [None, None]  # no graphs counted for Keras' eager steps
    for system in ("timm", "eager"):
        text = (tmp_path / "kernels" / f"profile_lambda_resnet50ts_{system}.txt").read_text()
        assert text.startswith("## training step\nper step: ") and "## inference step\n" in text
    kernels = json.loads((tmp_path / "steps.json").read_text())["tables"]["kernels"]
    assert [row[:3] for row in kernels["rows"]] == [
        ["lambda_resnet50ts", system, kind] for system in ("timm", "eager")
        for kind in ("training", "inference")
    ]
    import torch

    gpu = torch.cuda.is_available()  # kernels on a GPU only
    assert all(row[3] > 0 and (row[4] > 0 if gpu else row[4:] == [0, 0]) for row in kernels["rows"])


@pytest.mark.slow
@pytest.mark.torch("timm")
def test_the_compiled_row_counts_one_graph_per_step_and_no_break(tmp_path):
    (row,) = run(tmp_path, "compiled")["rows"]
    assert row[1] == "compiled" and row[8:] == [2, 0]
    assert row[6] > row[7] > 0  # the first steps compile
