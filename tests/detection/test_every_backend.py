"""Mask R-CNN on the backend this process runs (``KERAS_BACKEND``): run by
``tests/test_backends.py`` in a child pytest on JAX and PyTorch, which hands over a detector saved
on TensorFlow with its detections, losses and gradient norm on a fixed batch, and takes back a
detector trained and saved on the child's backend (``LAMBDA_KERAS_EXCHANGE``; the backbone:
``LAMBDA_KERAS_EXCHANGE_BACKBONE``)."""

import os
from pathlib import Path

import keras
import numpy as np
import pytest

from lambda_keras import zoo
from lambda_keras.detection import MaskRCNN, detect, targets
from tests.backend import BACKEND, values_and_gradients
from tests.detection.tiny import TINY_HEADS, synthetic_batch, tiny_backbone

EXCHANGE = os.environ.get("LAMBDA_KERAS_EXCHANGE")
pytestmark = pytest.mark.skipif(
    not EXCHANGE, reason="run on each backend by tests/test_backends.py"
)
SIZES = {**TINY_HEADS, "score_threshold": 0.2}


# The backbone of the exchanged detector: the default run's tiny one (JAX compiles a Mask R-CNN
# three times here: a LambdaResNet-50 backbone takes a minute of it), or under -m slow a
# narrow LambdaResNet-50 (tests/test_backends.py sets it for both sides).
BACKBONE = os.environ.get("LAMBDA_KERAS_EXCHANGE_BACKBONE", "tiny")


def exchange_detector() -> MaskRCNN:
    """The detector both sides save and load: a MaskRCNN on :data:`BACKBONE`."""
    keras.utils.set_random_seed(7)
    if BACKBONE == "lambda_resnet":
        backbone = zoo.LambdaResNetBackbone(
            50, input_shape=(64, 64, 3), width_multiplier=0.125, weights=None
        )
    else:
        backbone = tiny_backbone()
    model = MaskRCNN(backbone, num_classes=3, **SIZES)
    model.build((None, 64, 64, 3))
    return model


def _ordered_keys(mask, seed):
    """Sampling keys that every backend draws alike (their random generators differ): a fixed
    scramble of the positions."""
    del seed
    positions = keras.ops.arange(mask.shape[-1], dtype="float32")
    keys = keras.ops.broadcast_to((positions * 0.6180339887) % 1.0, keras.ops.shape(mask))
    return keras.ops.where(mask, keys, -1.0)


def losses_and_gradient_norm(model: MaskRCNN, monkeypatch) -> np.ndarray:
    """One training step's five losses and the gradients' global norm on the fixed batch."""
    monkeypatch.setattr(targets, "_random_keys", _ordered_keys)
    images, y = synthetic_batch()
    values, grads = values_and_gradients(
        lambda: model.compute_losses(images, y), model.trainable_variables
    )
    norm = np.sqrt(sum(float(np.sum(g.astype("float64") ** 2)) for g in grads))
    return np.array([*(values[k] for k in sorted(values)), norm])


def photo() -> np.ndarray:
    return np.random.default_rng(3).integers(0, 256, (48, 80, 3), dtype=np.uint8)


def assert_same_detections(got: dict, expected: dict) -> None:
    """The same detections, matched by class and box (near-equal scores may swap places)."""
    count = int(expected["num_detections"])
    assert int(got["num_detections"]) == count and count > 0
    for i in range(count):
        distance = np.abs(got["boxes"][:count] - expected["boxes"][i]).max(1)
        distance[got["classes"][:count] != expected["classes"][i]] = np.inf
        j = int(np.argmin(distance))
        assert distance[j] < 1e-2, (i, expected["boxes"][i], got["boxes"][:count])
        assert abs(got["scores"][j] - expected["scores"][i]) < 1e-4
        assert np.mean(got["masks"][j] != expected["masks"][i]) < 1e-3


def save_detection_exchange(folder: Path, monkeypatch) -> None:
    """The TensorFlow side: the detector, its detections, losses and gradient norm."""
    model = exchange_detector()
    model.save(folder / "tensorflow_detector.keras")
    detections = detect(model, photo(), image_size=64)
    steps = losses_and_gradient_norm(model, monkeypatch)
    np.savez(folder / "tensorflow_detector.npz", step=steps, **detections)


def test_the_tensorflow_detector_detects_and_trains_alike(monkeypatch):
    folder = Path(EXCHANGE)
    expected = dict(np.load(folder / "tensorflow_detector.npz"))
    model = keras.saving.load_model(folder / "tensorflow_detector.keras")
    assert_same_detections(detect(model, photo(), image_size=64), expected)
    np.testing.assert_allclose(
        losses_and_gradient_norm(model, monkeypatch), expected["step"], rtol=1e-4
    )


def test_a_detector_fits_saves_and_goes_back(monkeypatch):
    # TensorFlow's detector and the RoIs every backend samples alike: built here, the random
    # weights are this backend's own draw, and PyTorch's LambdaResNet detector started at a mask
    # loss of 8.7 (TensorFlow's 1.0); after its epoch no score reached the threshold, and the
    # parent had no detections to compare.
    monkeypatch.setattr(targets, "_random_keys", _ordered_keys)
    model = keras.saving.load_model(Path(EXCHANGE) / "tensorflow_detector.keras")
    model.compile(optimizer=keras.optimizers.SGD(0.01))
    images, y = synthetic_batch()
    history = model.fit(images, y, batch_size=2, epochs=1, verbose=0).history
    assert all(np.isfinite(v[0]) for v in history.values()) and len(history) == 7
    assert history["dropped_targets"] == [0.0]
    folder = Path(EXCHANGE)
    model.save(folder / f"{BACKEND}_detector.keras")
    np.savez(folder / f"{BACKEND}_detector.npz", **detect(model, photo(), image_size=64))
