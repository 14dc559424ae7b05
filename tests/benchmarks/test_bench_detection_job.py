"""The detection-job benchmark reads the scores train_maskrcnn.py prints."""

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
import bench_detection_job as bench  # noqa: E402
import children  # noqa: E402

sys.path.remove(str(BENCHMARKS))


def fake_run(stdout: str, returncode: int = 0):
    def run(command, **kwargs):
        assert command[1] == bench.SCRIPT and "--backend=jax" in command
        return subprocess.CompletedProcess(command, returncode, stdout, "trace")

    return run


def test_a_run_gives_the_scores_the_script_printed(monkeypatch):
    printed = (
        "AP50: box 0.997, mask 0.999.\n"
        "box AP 0.951, mask AP 0.971 (IoU .50:.95) after 1335 s of training.\n"
    )
    monkeypatch.setattr(children.subprocess, "run", fake_run(printed))
    row = bench.run("jax", "/tmp/x", steps=None)
    assert {k: row[k] for k in ("box_ap", "mask_ap", "box_ap50", "mask_ap50", "train_s")} == {
        "box_ap": 0.951,
        "mask_ap": 0.971,
        "box_ap50": 0.997,
        "mask_ap50": 0.999,
        "train_s": 1335,
    }
    assert row["left_out"] == 0  # the script printed no "Left out of the loss" line


def test_a_run_gives_the_targets_the_script_left_out_of_the_loss(monkeypatch):
    printed = (
        "AP50: box 0.997, mask 0.999.\n"
        "box AP 0.951, mask AP 0.971 (IoU .50:.95) after 1335 s of training.\n"
        "Left out of the loss: 557 target rows (objects) that break the rule of ...\n"
    )
    monkeypatch.setattr(children.subprocess, "run", fake_run(printed))
    assert bench.run("jax", "/tmp/x", steps=None)["left_out"] == 557


def test_a_failed_or_unexpected_run_is_an_error(monkeypatch):
    monkeypatch.setattr(children.subprocess, "run", fake_run("", returncode=1))
    with pytest.raises(RuntimeError, match="failed"):
        bench.run("jax", "/tmp/x", steps=2)
    monkeypatch.setattr(children.subprocess, "run", fake_run("box AP ?"))
    with pytest.raises(RuntimeError, match="unexpected output"):
        bench.run("jax", "/tmp/x", steps=2)
