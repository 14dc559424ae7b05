"""``train_maskrcnn.py --backend=jax``: ``keras.distribution`` over two CPU devices trains to one
device's losses, and what the JAX run writes (``model.keras``, the SavedModel a TensorFlow
process exports from it) serves on TensorFlow."""

import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from tests.backend import FAST_XLA_COMPILE, child_env, run_script_on_jax
from tests.scripts.test_train_maskrcnn import shapes_flags
from tests.training_log import logged

RUN = ["--steps=2", "--steps_per_epoch=1", "--image_size=64", "--batch_size=2"]

pytestmark = pytest.mark.slow  # two JAX runs, each compiling a Mask R-CNN's step and predict


def train_on_jax(model_dir: Path, data: Path, *flags: str, devices: int = 2) -> str:
    return run_script_on_jax(
        "train_maskrcnn.py",
        *RUN,
        *shapes_flags(data),
        f"--model_dir={model_dir}",
        *flags,
        devices=devices,
    )


def losses(model_dir: Path) -> np.ndarray:
    return np.array(logged(model_dir, "loss"), dtype=float)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("maskrcnn_jax")
    two = train_on_jax(root / "two", root / "data", "--strategy=auto")
    one = train_on_jax(root / "one", root / "data", "--strategy=one_device", "--noexport")
    return root, two, one


def test_two_devices_train_as_one(runs):
    root, two, one = runs
    assert "distribution: keras.distribution.DataParallel over 2 cpu device(s)" in two
    assert "distribution: none (one cpu device)" in one
    assert "on jax" in two and "box AP" in two and "box AP" in one
    by_two, by_one = losses(root / "two"), losses(root / "one")
    assert len(by_two) == len(by_one) == 2 and np.isfinite(by_two).all()
    np.testing.assert_allclose(by_two, by_one, rtol=1e-4)


def test_what_jax_wrote_serves_on_tensorflow(runs):
    root, _, _ = runs
    run = root / "two"
    assert (run / "model.keras").is_file() and (run / "labels.json").is_file()
    served = tf.saved_model.load(str(run / "saved_model")).signatures["serving_default"]
    image = np.random.default_rng(0).integers(0, 255, (50, 70, 3)).astype(np.uint8)
    out = served(image=tf.constant(image))
    assert out["masks"].shape[1:] == (50, 70) and out["masks"].dtype == tf.uint8


def test_a_killed_jax_run_resumes_from_its_last_epoch(tmp_path):
    """Killed after its first epoch, the same command goes on from the backup: every epoch is
    logged once, none twice, and the run finishes (keras.callbacks.BackupAndRestore on JAX)."""
    root = Path(__file__).resolve().parents[2]
    command = [sys.executable, str(root / "scripts" / "train_maskrcnn.py"), "--backend=jax"]
    command += ["--steps=5", "--steps_per_epoch=1", "--image_size=64", "--batch_size=2"]
    command += [*shapes_flags(tmp_path / "data"), f"--model_dir={tmp_path / 'run'}", "--noexport"]
    env = child_env(XLA_FLAGS=f"--xla_force_host_platform_device_count=2 {FAST_XLA_COMPILE}")
    first = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    deadline = time.time() + 600
    while not epochs(tmp_path / "run") and time.time() < deadline and first.poll() is None:
        time.sleep(0.2)
    first.send_signal(signal.SIGKILL)
    first.wait()
    done = epochs(tmp_path / "run")
    assert done and done == list(range(len(done))) and len(done) < 5, done
    second = subprocess.run(command, capture_output=True, text=True, env=env, timeout=1200)
    assert second.returncode == 0, second.stderr[-3000:]
    assert epochs(tmp_path / "run") == list(range(5))
    assert "box AP" in second.stdout


def epochs(model_dir: Path) -> list[int]:
    return [int(epoch) for epoch in logged(model_dir, "epoch")]
