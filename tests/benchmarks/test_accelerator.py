"""The accelerator suite: each stage's command for the device, its budget, and a tiny run on
the CPU where TensorFlow cannot be imported (end to end)."""

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.backend import FAST_XLA_COMPILE, child_env_without_tensorflow

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "accelerator.py"
sys.path.insert(0, str(SCRIPT.parent))
import accelerator  # noqa: E402


@pytest.mark.parametrize(
    "device, expected",
    [("1 x NVIDIA H100 80GB HBM3", ["bfloat16"]), ("tpu", ["bfloat16"]), ("cpu", ["float32"])],
)
def test_the_training_precision_is_the_first_gpu_runs(device, expected):
    assert accelerator.policies(device) == expected


def test_each_stage_runs_its_benchmark_with_the_device_s_settings(tmp_path):
    args = accelerator.parse(["--backends=jax,torch", f"--output-dir={tmp_path}"])
    commands = accelerator.plan(args, "1 x NVIDIA H100 80GB HBM3")
    assert list(commands) == list(accelerator.STAGES)
    train = commands["train"]
    assert train[1].endswith("bench_train.py") and train[-1] == f"--output={tmp_path}/train.json"
    option = {train[i]: train[i + 1] for i in range(2, len(train) - 1) if train[i][:2] == "--"}
    assert (option["--batch"], option["--size"], option["--policies"]) == ("64", "256", "bfloat16")
    models = train[train.index("--models") + 1 : train.index("--policies")]
    assert models[:2] == ["lambda_resnet50ts", "keras_resnet50"]  # timm's references first
    assert train[train.index("--backends") + 1 :][:3] == ["jax", "torch", "timm"]
    assert "--backends=jax,torch" in commands["layers"] and "--quick" in commands["layers"]
    assert any("maskrcnn_resnet50_fpn" in part for part in commands["detection"])
    tiny = accelerator.plan(accelerator.parse(["--tiny", f"--output-dir={tmp_path}"]), "cpu")
    assert "--size" in tiny["train"] and "--sizes=128" in tiny["detection"]
    # the tiny run trains one model (the port of timm's LambdaResNet-50; timm's own beside it)
    tiny_models = tiny["train"][tiny["train"].index("--models") + 1 :]
    assert tiny_models[: tiny_models.index("--policies")] == ["lambda_resnet50ts"]
    assert "--models=maskrcnn_resnet50_fpn" in tiny["detection"]  # torchvision's column too


def test_the_training_stage_is_told_its_share(monkeypatch):
    seen = {}

    def run(command, timeout):
        seen["command"], seen["timeout"] = command, timeout
        return 0

    monkeypatch.setattr(accelerator, "run_in_own_group", run)
    result = accelerator.run_stage([sys.executable, "bench_train.py", "--batch", "2"], 100.4)
    assert seen["command"][-2:] == ["--max-seconds", "100"] and result["status"] == "finished"
    assert seen["timeout"] == 100.4 + accelerator.GRACE


def test_a_stage_that_outruns_its_share_is_stopped_with_what_it_started(monkeypatch, tmp_path):
    """The stage and its children (a benchmark's row processes, which hold the GPU)."""
    monkeypatch.setattr(accelerator, "GRACE", 0)
    pid_file = tmp_path / "child.pid"
    script = (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        "time.sleep(60)\n"
    )
    result = accelerator.run_stage([sys.executable, "-c", script], 3.0)
    assert result["status"].startswith("stopped after its share") and result["seconds"] < 30
    child = int(pid_file.read_text())
    for _ in range(50):  # killed: gone, or a zombie until its parent's parent reaps it
        state = Path(f"/proc/{child}/stat")
        if not state.exists() or state.read_text().split()[2] == "Z":
            break
        time.sleep(0.1)
    else:
        raise AssertionError(f"the stage's child {child} still runs")


@pytest.mark.end_to_end
@pytest.mark.torch("torchvision", "timm")
def test_a_tiny_run_without_tensorflow_writes_every_stage_s_results(tmp_path):
    """As on a GPU image: TensorFlow cannot be imported in the suite or any process it starts;
    JAX and PyTorch columns, timm's and torchvision's references."""
    env = child_env_without_tensorflow(
        tmp_path, XLA_FLAGS=FAST_XLA_COMPILE, TF_CPP_MIN_LOG_LEVEL="2"
    )
    command = [sys.executable, str(SCRIPT), "--tiny", "--budget=1500"]
    result = subprocess.run(
        [*command, f"--output-dir={tmp_path / 'out'}"],
        capture_output=True,
        text=True,
        timeout=1800,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["device"] == "cpu"
    assert {s: r["status"] for s, r in summary["stages"].items()} == dict.fromkeys(
        accelerator.STAGES, "finished"
    ), result.stderr[-3000:]
    stages = {
        name: json.loads((tmp_path / "out" / f"{name}.json").read_text())["tables"]
        for name in accelerator.STAGES
    }
    train = stages["train"]["train"]
    assert {row[0] for row in train["rows"]} == {"jax", "torch", "timm"}, train
    assert all(isinstance(cell, float) for row in train["rows"] for cell in row[4:]), train
    detection = stages["detection"]["training"]  # torchvision's step beside the converted model's
    assert detection["columns"][2:] == ["torchvision", "jax", "torch"], detection
    assert all(isinstance(cell, float) for row in detection["rows"] for cell in row[2:])
    assert "tensorflow" not in json.dumps(stages["layers"]["layers"]["columns"])
