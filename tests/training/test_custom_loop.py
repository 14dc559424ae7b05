"""The strategy.run training loop: the same weights as model.fit, and as one worker when two
MultiWorkerMirroredStrategy workers train together (real processes on 127.0.0.1)."""

import json
import os
import re
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import keras
import numpy as np
import pytest

from lambda_keras.training.classification import ClassificationConfig, train
from lambda_keras.training.custom_loop import fit_with_strategy_run

ROOT = Path(__file__).resolve().parents[2]
# 16 steps of batch 64 (of 22 in an epoch; >10 so that the capped EMA and batch-norm decays are
# not 0): the comparisons need steps, not epochs.
STEPS = 16
TINY = dict(
    width_multiplier=0.125,
    image_size=32,
    batch_size=64,
    steps_per_epoch=STEPS,
    deterministic=True,
    verbose=0,
)


def weights(model_or_path):
    import lambda_keras  # noqa: F401  (registers the layers)

    model = model_or_path
    if not isinstance(model, keras.Model):
        model = keras.saving.load_model(model_or_path)
    return {v.path: np.asarray(v.numpy()) for v in model.weights}


def log_rows(model_dir):
    with open(Path(model_dir) / "log.csv") as f:
        return f.read().splitlines()


@pytest.mark.end_to_end
# float16 runs the same arithmetic as float32 plus loss scaling: float32 alone under -m slow.
@pytest.mark.parametrize("precision", [pytest.param("none", marks=pytest.mark.slow), "float16"])
def test_custom_loop_gives_fits_weights(tmp_path, precision):
    runs = {
        loop: train(
            ClassificationConfig(
                model_dir=str(tmp_path / loop),
                epochs=1,
                loop=loop,
                mixed_precision=precision,
                export=False,
                **TINY,
            )
        )
        for loop in ("fit", "custom")
    }
    by_fit, by_loop = runs["fit"], runs["custom"]
    assert by_fit["steps"] == by_loop["steps"] == STEPS
    assert by_loop["top1"] == pytest.approx(by_fit["top1"], abs=1e-6)
    expected, got = weights(by_fit["model"]), weights(by_loop["model"])
    assert expected.keys() == got.keys()
    for name in expected:  # EMA, L2, label smoothing, BN decay: the same arithmetic
        np.testing.assert_allclose(got[name], expected[name], rtol=1e-5, atol=1e-6, err_msg=name)
    if precision == "float16":  # compile's loss scaling, which the custom loop applies too
        assert isinstance(by_loop["model"].optimizer, keras.optimizers.LossScaleOptimizer)
    fit_rows, loop_rows = log_rows(tmp_path / "fit"), log_rows(tmp_path / "custom")
    assert loop_rows[0] == "epoch,loss,top1,top5" and len(loop_rows) == 2
    fit_logged = dict(zip(fit_rows[0].split(","), fit_rows[1].split(","), strict=True))
    loop_logged = dict(zip(loop_rows[0].split(","), loop_rows[1].split(","), strict=True))
    for key in ("loss", "top1", "top5"):
        assert float(loop_logged[key]) == pytest.approx(float(fit_logged[key]), rel=1e-5)
    assert (tmp_path / "custom" / "tensorboard" / "train").is_dir()
    assert (tmp_path / "custom" / "checkpoint.keras").exists()
    assert (tmp_path / "fit" / "checkpoint.keras").exists()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_workers(command, env, count=2):
    """``count`` MultiWorkerMirroredStrategy workers on 127.0.0.1 running ``command``."""
    workers = [f"127.0.0.1:{free_port()}" for _ in range(count)]
    procs = []
    for index in range(count):
        config = {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}}
        procs.append(
            subprocess.Popen(
                command,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env={**env, "TF_CONFIG": json.dumps(config)},
            )
        )
    return procs


def finish(procs, timeout=600):
    """The workers' outputs once all have exited successfully."""
    outputs = []
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=timeout)
            assert proc.returncode == 0, err[-3000:]
            outputs.append(out)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    return outputs


# float64 so that the comparison sees the algorithm, not float32 rounding: synchronised batch
# norm sums in another order, and 22 steps of training amplify those differences (float32:
# about 1e-4 after one step, far more after an epoch; float64: 1e-13 after three steps). One
# epoch of STEPS steps: the comparison needs steps, not epochs (the killed two-worker run, under
# -m slow, crosses epochs). The reference run exports nothing: the chief's export is the test.
JOB = textwrap.dedent(
    f"""
    import sys, keras
    keras.config.set_floatx("float64")
    from lambda_keras.training.classification import ClassificationConfig, train
    from lambda_keras.training.distribute import PlacementConfig
    train(ClassificationConfig(model_dir=sys.argv[1], loop=sys.argv[2],
                      placement=PlacementConfig(strategy=sys.argv[3]),
                      epochs=1, width_multiplier=0.125, image_size=32, batch_size=64,
                      steps_per_epoch={STEPS}, deterministic=True, sync_batch_norm=True,
                      verbose=2, export=sys.argv[4] == "export"))
    """
)


@pytest.mark.slow  # two worker processes and a reference run: 110 s on 2 cores
def test_two_workers_train_to_the_single_worker_weights(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "2"}
    env.pop("TF_CONFIG", None)
    single = subprocess.run(
        [sys.executable, "-c", JOB, str(tmp_path / "single"), "custom", "auto", "noexport"],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert single.returncode == 0, single.stderr[-3000:]
    procs = start_workers(
        [sys.executable, "-c", JOB, str(tmp_path / "multi"), "auto", "multi_worker", "export"], env
    )
    outputs = finish(procs)
    assert all("on 2 replica(s)" in out for out in outputs)
    assert "exported" in outputs[0] and "exported" not in outputs[1]  # the chief exports
    assert not (tmp_path / "multi" / "backup" / "worker-1").exists()  # scratch removed
    assert len(log_rows(tmp_path / "multi")) == 2  # header + 1 epoch, from the chief alone
    expected, got = (
        weights(tmp_path / "single" / "checkpoint.keras"),  # the weights after the epoch
        weights(tmp_path / "multi" / "checkpoint.keras"),
    )
    for name in expected:
        np.testing.assert_allclose(got[name], expected[name], rtol=1e-7, atol=1e-9, err_msg=name)
    moved = max(np.abs(v).max() for k, v in expected.items() if k.endswith("conv/kernel"))
    assert moved > 0.1


def test_rejects_a_model_without_one_loss_object():
    import tensorflow as tf

    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    with pytest.raises(TypeError, match="keras.losses.Loss"):
        fit_with_strategy_run(
            model,
            tf.distribute.get_strategy(),
            lambda ctx: None,
            epochs=1,
            steps_per_epoch=1,
            model_dir="unused",
        )


@pytest.mark.slow
def test_killed_two_worker_run_resumes_from_the_chiefs_checkpoint(tmp_path):
    import signal
    import time

    env = {**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "2"}
    env.pop("TF_CONFIG", None)
    command = [
        sys.executable,
        str(ROOT / "scripts" / "train.py"),
        "--strategy=multi_worker",
        f"--model_dir={tmp_path}",
        "--epochs=3",
        "--width_multiplier=0.125",
        "--noexport",
    ]
    procs = start_workers(command, env)
    log = tmp_path / "log.csv"
    deadline = time.time() + 600
    while not (log.exists() and len(log_rows(tmp_path)) == 2) and time.time() < deadline:
        assert all(proc.poll() is None for proc in procs), "a worker exited early"
        time.sleep(0.2)
    for proc in procs:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert len(log_rows(tmp_path)) == 2  # killed during the second epoch
    outputs = finish(start_workers(command, env))
    assert all("after epoch 1" in out for out in outputs)  # both from the chief's checkpoint
    assert [row.split(",")[0] for row in log_rows(tmp_path)[1:]] == ["0", "1", "2"]
    assert all(f"{3 * (1437 // 64)} steps" in out for out in outputs)
    # Per-replica batch-norm statistics are averaged: both workers evaluate the same model.
    scores = [re.search(r"test top-1 [\d.]+, top-5 [\d.]+", out)[0] for out in outputs]
    assert scores[0] == scores[1]
