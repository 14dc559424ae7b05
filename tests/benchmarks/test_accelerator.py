"""The accelerator suite: each stage's command for the device, its budget, and a tiny run on
the CPU (slow)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.backend import child_env

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "accelerator.py"
sys.path.insert(0, str(SCRIPT.parent))
import accelerator  # noqa: E402


@pytest.mark.parametrize(
    "device, expected",
    [
        ("1 x NVIDIA H100 80GB HBM3", ["float32", "bfloat16", "float16"]),
        ("tpu", ["float32", "bfloat16"]),
        ("cpu", ["float32"]),
    ],
)
def test_the_precisions_are_those_the_device_computes(device, expected):
    assert accelerator.policies(device) == expected


def test_each_stage_runs_its_benchmark_with_the_device_s_settings(tmp_path):
    args = accelerator.parse(["--backends=jax,torch", f"--output-dir={tmp_path}"])
    commands = accelerator.plan(args, "1 x NVIDIA H100 80GB HBM3")
    assert list(commands) == list(accelerator.STAGES)
    train = commands["train"]
    assert train[1].endswith("bench_train.py") and train[-1] == f"--output={tmp_path}/train.json"
    policies = train[train.index("--policies") + 1 : train.index("--backends")]
    assert policies == ["float32", "bfloat16", "float16"]
    assert "efficientnet_b3" in train and train[train.index("--backends") + 1 :][:2] == [
        "jax",
        "torch",
    ]
    assert "--backends=jax,torch" in commands["layers"] and "--quick" in commands["layers"]
    assert any("maskrcnn_resnet50_fpn" in part for part in commands["detection"])
    tiny = accelerator.plan(accelerator.parse(["--tiny", f"--output-dir={tmp_path}"]), "cpu")
    assert "--size" in tiny["train"] and "--sizes=128" in tiny["detection"]


def test_the_training_stage_is_told_its_share(monkeypatch):
    seen = {}

    def run(command, **kwargs):
        seen["command"], seen["timeout"] = command, kwargs["timeout"]
        return subprocess.CompletedProcess(command, 0)

    monkeypatch.setattr(accelerator.subprocess, "run", run)
    result = accelerator.run_stage([sys.executable, "bench_train.py", "--batch", "2"], 100.4)
    assert seen["command"][-2:] == ["--max-seconds", "100"] and result["status"] == "finished"
    assert seen["timeout"] == 100.4 + accelerator.GRACE


def test_a_stage_that_outruns_its_share_is_stopped_and_said_so(monkeypatch):
    monkeypatch.setattr(accelerator, "GRACE", 0)
    result = accelerator.run_stage([sys.executable, "-c", "import time; time.sleep(30)"], 1.0)
    assert result["status"].startswith("stopped after its share") and result["seconds"] < 20


@pytest.mark.slow
def test_a_tiny_run_writes_every_stage_s_results_and_a_summary(tmp_path):
    command = [sys.executable, str(SCRIPT), "--tiny", "--backends=tensorflow", "--budget=1500"]
    result = subprocess.run(
        [*command, f"--output-dir={tmp_path}"],
        capture_output=True,
        text=True,
        timeout=1800,
        env=child_env(),
    )
    assert result.returncode == 0, result.stderr[-2000:]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["device"] == "cpu"
    assert {s: r["status"] for s, r in summary["stages"].items()} == dict.fromkeys(
        accelerator.STAGES, "finished"
    )
    for name in ("layers", "train", "detection"):
        data = json.loads((tmp_path / f"{name}.json").read_text())
        assert data["device"] == "cpu" and data["tables"], name
