"""The detection trainer's choice of ``jit_compile`` per backend from ``--jit_compile`` and its
count of the targets left out of the loss (the runs themselves:
tests/scripts/test_train_maskrcnn*.py and test_torch_backend.py)."""

import keras
import pytest

from lambda_keras.training.detection import trainer


@pytest.mark.parametrize(
    "backend, flag, expected",
    [
        ("jax", False, True),  # JAX always compiles
        ("tensorflow", False, False),
        ("tensorflow", True, True),  # XLA
        ("torch", False, "auto"),  # LAMBDA_KERAS_TORCH_COMPILE decides: compiled on a GPU
        ("torch", True, True),  # compiled on a CPU too
    ],
)
def test_jit_compile_per_backend(backend, flag, expected, monkeypatch):
    monkeypatch.setattr(keras.backend, "backend", lambda: backend)
    assert trainer._jit_compile(flag) == expected


def test_the_result_counts_the_targets_left_out_of_the_loss():
    history = {"loss": [2.0, 1.0], "dropped_targets": [3.0, 0.0]}  # a sum per epoch
    assert trainer._dropped_targets(history) == 3
    assert trainer._dropped_targets({"loss": [1.0]}) == 0  # a model without the metric
    scores = {name: {"AP50": 0.5, "AP": 0.25} for name in ("bbox", "segm")}
    lines = trainer._result_lines(scores, 12.0, 3)
    assert lines[1] == "box AP 0.250, mask AP 0.250 (IoU .50:.95) after 12 s of training."
    assert lines[2].startswith("Left out of the loss: 3 target rows")
    assert "lambda_keras.detection.target_checks" in lines[2]
    assert len(trainer._result_lines(scores, 12.0, 0)) == 2  # nothing left out: no line
