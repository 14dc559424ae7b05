"""``train_maskrcnn.py --backend=jax``: ``keras.distribution`` over two CPU devices trains to one
device's losses, and what the JAX run writes (``model.keras``, the SavedModel a TensorFlow
process exports from it) serves on TensorFlow."""

import csv
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from tests.backend import run_script_on_jax
from tests.scripts.test_train_maskrcnn import shapes_flags

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
    with open(model_dir / "log.csv") as f:
        return np.array([float(row["loss"]) for row in csv.DictReader(f)])


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
