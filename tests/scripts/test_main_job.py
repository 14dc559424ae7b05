"""The README's main job, run as a user runs it: >= 95% test top-1 on the digits (slow)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.parametrize(
    "model, backend",
    [
        ("lambda_resnet50", "tensorflow"),
        ("resnet_rs50", "tensorflow"),
        ("lambda_resnet50", "jax"),
    ],
)
def test_main_job_reaches_95_percent(tmp_path, model, backend):
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    env.pop("KERAS_BACKEND", None)
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "train.py"),
            f"--model={model}",
            f"--model_dir={tmp_path}",
            f"--backend={backend}",
        ],
        capture_output=True,
        text=True,
        timeout=1800,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Epoch 30/30" in result.stdout  # per-epoch progress
    top1 = float(re.search(r"test top-1 ([\d.]+)", result.stdout)[1])
    assert top1 >= 0.95
    assert (tmp_path / "model.keras").exists()
    assert (tmp_path / "saved_model" / "saved_model.pb").exists()
    assert f"exported {tmp_path / 'model.keras'}" in result.stdout
