"""The scripts train on Keras' PyTorch backend (one device) and export a SavedModel that scores
as the run did. Needs PyTorch (``.[test-torch]``, CI's second stage)."""

import csv
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.end_to_end, pytest.mark.torch]


def run(script: str, *flags: str) -> str:
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONPATH": str(ROOT)}
    env.pop("KERAS_BACKEND", None)
    env.pop("LAMBDA_KERAS_TORCH_COMPILE", None)  # a user's default (tests/conftest.py sets it)
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / script), *flags],
        capture_output=True,
        text=True,
        env=env,
        timeout=1200,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_train_on_torch_exports_what_it_scored(tmp_path):
    out = run(
        "train.py",
        "--backend=torch",
        "--epochs=1",
        "--steps_per_epoch=3",
        "--width_multiplier=0.125",
        f"--model_dir={tmp_path}",
    )
    top1 = re.search(r"test top-1 ([\d.]+)", out)[1]
    for path in ("saved_model", "model.keras"):  # scored on TensorFlow, as a user would
        scored = run("eval.py", f"--model_path={tmp_path / path}")
        assert f"top-1 {top1}" in scored, (path, top1, scored)


def train_maskrcnn(tmp_path, *flags: str) -> str:
    """Two steps of train_maskrcnn.py on PyTorch at 64 px on the shapes data."""
    return run(
        "train_maskrcnn.py",
        "--backend=torch",
        *flags,
        "--steps=2",
        "--steps_per_epoch=1",
        "--image_size=64",
        "--batch_size=2",
        f"--model_dir={tmp_path / 'run'}",
        f"--shapes_dir={tmp_path / 'shapes'}",
    )


def test_train_maskrcnn_on_torch_scores_and_exports(tmp_path):
    out = train_maskrcnn(tmp_path)
    # Every object trained on: PyTorch's mask crops of 1.0000001 were once refused targets,
    # three in four of the shapes' objects left out of the loss.
    with open(tmp_path / "run" / "log.csv") as f:
        assert [float(row["dropped_targets"]) for row in csv.DictReader(f)] == [0.0, 0.0]
    assert "on torch" in out and "box AP" in out.splitlines()[-1]  # no line of left-out rows
    assert "compiled the train step" not in out  # a CPU: Keras' eager steps by default
    assert (tmp_path / "run" / "saved_model" / "saved_model.pb").is_file()


@pytest.mark.slow  # Inductor compiles the Mask R-CNN's training step on 2 cores: minutes
def test_train_maskrcnn_compiled_on_torch_prints_the_compile(tmp_path):
    out = train_maskrcnn(tmp_path, "--jit_compile")
    compiled = re.findall(r"compiled the train step \(graph (\d), .*\) in ([\d.]+) s", out)
    assert [graph for graph, _ in compiled] == ["1"], out  # one graph for both steps
    # The evaluation's predict_on_batch runs no callbacks; the trainer reports it after.
    assert re.search(r"compiled the predict step \(graph 1, .*\) in [\d.]+ s", out), out
    assert "runs eagerly" not in out and "box AP" in out.splitlines()[-1]
