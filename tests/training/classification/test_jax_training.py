"""Training with Keras on JAX (``train.py --backend=jax``): ``keras.distribution`` over two CPU
devices equals one device, and what the run writes loads, evaluates and serves on TensorFlow."""

import concurrent.futures
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from lambda_keras.training.classification.data import load_source, pad_batches
from lambda_keras.training.classification.evaluation import evaluate
from lambda_keras.training.distribute import check_strategy
from tests.backend import run_script_on_jax
from tests.script_flags import load_script
from tests.training_log import logged

backend_from_argv = load_script("placement_flags").backend_from_argv

ROOT = Path(__file__).resolve().parents[3]
RUN = ["--epochs=2", "--steps_per_epoch=3", "--width_multiplier=0.125", "--deterministic"]


def train_on_jax(model_dir: Path, *flags: str, devices: int = 2):
    return run_script_on_jax(
        "train.py", *RUN, f"--model_dir={model_dir}", *flags, devices=devices, timeout=900
    )


def losses(model_dir: Path) -> np.ndarray:
    return np.array(logged(model_dir, "loss"), dtype=float)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The same run on two devices (DataParallel, exported) and on one (no distribution)."""
    root = tmp_path_factory.mktemp("jax_runs")
    two = train_on_jax(root / "two", "--strategy=auto")
    one = train_on_jax(root / "one", "--strategy=one_device", "--noexport")
    return root, two, one


@pytest.mark.end_to_end
def test_two_devices_train_as_one(runs):
    root, two, one = runs
    assert "distribution: keras.distribution.DataParallel over 2 cpu device(s)" in two
    assert "on 2 replica(s)" in two
    assert "distribution: none (one cpu device)" in one
    assert "6 steps" in two and "6 steps" in one
    by_two, by_one = losses(root / "two"), losses(root / "one")
    assert len(by_two) == len(by_one) == 2
    # The global batch's statistics on both (one XLA program over the devices): float32 sums in
    # another order only.
    np.testing.assert_allclose(by_two, by_one, rtol=1e-4)
    assert top1(two) == pytest.approx(top1(one), abs=1 / 360)  # at most one image of 360


def top1(stdout: str) -> float:
    return float(stdout.split("test top-1 ")[1].split(",")[0])


@pytest.mark.end_to_end
def test_what_jax_wrote_evaluates_and_serves_on_tensorflow(runs):
    root, two, _ = runs
    run = root / "two"
    for name in ("model.keras", "checkpoint.keras", "labels.json", "run_settings.json"):
        assert (run / name).is_file(), name
    assert (run / "tensorboard" / "train").is_dir()
    assert (run / "saved_model" / "saved_model.pb").is_file()
    source = load_source("digits", "test")
    by_keras = evaluate(str(run / "model.keras"), source, image_size=32)
    by_saved_model = evaluate(str(run / "saved_model"), source, image_size=32)
    assert by_keras["examples"] == by_saved_model["examples"] == 360
    # JAX's evaluate (batches padded for the two devices, weights 0 on the padding) and
    # TensorFlow's agree on every image: the same share of 360 images, printed to 4 decimals.
    assert by_keras["top1"] == pytest.approx(top1(two), abs=5e-5)
    assert by_saved_model["top1"] == pytest.approx(top1(two), abs=5e-5)
    assert by_keras["top1"] == by_saved_model["top1"]


@pytest.mark.slow
def test_two_hosts_train_as_one_device(runs, tmp_path):
    """Two processes on 127.0.0.1, one CPU device each, joined by keras.distribution.initialize
    (JAX's CPU collectives): each reads its half of every global batch; the run equals one
    device's. Process 0 writes the files; process 1 keeps its backup (until the end) and takes
    part in every save (on JAX a collective step) into its own directory."""
    root, _, _ = runs
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    hosts = [f"--coordinator_address=127.0.0.1:{port}", "--num_processes=2"]
    model_dir = tmp_path / "hosts"
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        outputs = list(
            pool.map(
                lambda i: train_on_jax(model_dir, *hosts, f"--process_id={i}", devices=1), (0, 1)
            )
        )
    assert all("DataParallel over 2 cpu device(s) in 2 process(es)" in out for out in outputs)
    np.testing.assert_allclose(losses(model_dir), losses(root / "one"), rtol=1e-4)
    assert top1(outputs[0]) == top1(outputs[1])
    assert (model_dir / "saved_model" / "saved_model.pb").is_file()
    assert "exported" in outputs[0] and "exported" not in outputs[1]
    scratch = sorted(p.name for p in (model_dir / "process-1").iterdir())
    assert scratch == ["checkpoint.keras", "model.keras"]  # its backup removed at the end


def test_backend_flag_is_read_before_keras_and_checked_against_the_environment():
    assert backend_from_argv(["--backend=jax"], {}) == "jax"
    assert backend_from_argv(["--epochs=2", "--backend", "jax"], {}) == "jax"
    assert backend_from_argv(["--epochs=2"], {"KERAS_BACKEND": "jax"}) is None  # env applies
    assert backend_from_argv(["--backend=jax"], {"KERAS_BACKEND": "jax"}) == "jax"
    with pytest.raises(SystemExit, match="--backend=jax contradicts KERAS_BACKEND=torch"):
        backend_from_argv(["--backend=jax"], {"KERAS_BACKEND": "torch"})
    with pytest.raises(
        SystemExit, match="--backend must be one of tensorflow, jax, torch; received 'x"
    ):
        backend_from_argv(["--backend=xla"], {})


def test_a_contradicting_backend_is_one_line_from_the_script(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KERAS_BACKEND": "torch"}
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "train.py"), "--backend=jax"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "--backend=jax contradicts KERAS_BACKEND=torch in the environment; pass one of them "
        "(or the same backend in both)."
    )


@pytest.mark.parametrize(
    "strategy, backend, message",
    [
        ("mirrored", "jax", "--strategy=mirrored needs --backend=tensorflow; this run is on jax"),
        ("tpu", "jax", "on JAX, --strategy=data_parallel"),
        ("multi_worker", "jax", "--coordinator_address/--num_processes/--process_id"),
        ("data_parallel", "tensorflow", "--strategy=data_parallel needs --backend=jax"),
        ("mirrored", "torch", "needs --backend=tensorflow; this run is on torch: on PyTorch"),
        ("data_parallel", "torch", "--strategy=data_parallel needs --backend=jax"),
        ("auto", "numpy", "Training runs with Keras on tensorflow or jax or torch; this process"),
        ("horovod", "jax", "--strategy must be one of auto, tpu, mirrored"),
    ],
)
def test_a_strategy_of_the_other_backend_names_what_to_use(strategy, backend, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        check_strategy(strategy, backend)
    if backend != "numpy":
        check_strategy("auto", backend)
        check_strategy("one_device", backend)


def test_padded_batches_score_every_image_once():
    images = tf.reshape(tf.range(7 * 2, dtype=tf.float32), (7, 2))
    labels = tf.one_hot(tf.range(7) % 3, 3)
    padded = pad_batches(tf.data.Dataset.from_tensor_slices((images, labels)).batch(3), 3)
    assert padded.element_spec[0].shape == (3, 2)  # static: hosts can share it out
    batches = list(padded)
    assert [int(b[0].shape[0]) for b in batches] == [3, 3, 3]
    weights = np.concatenate([b[2].numpy() for b in batches])
    np.testing.assert_array_equal(weights, [1, 1, 1, 1, 1, 1, 1, 0, 0])
    kept = np.concatenate([b[0].numpy() for b in batches])[weights == 1]
    np.testing.assert_array_equal(kept, images.numpy())  # each real image once, in order
    np.testing.assert_array_equal(batches[-1][0].numpy(), [images[6]] * 3)  # its own copies
