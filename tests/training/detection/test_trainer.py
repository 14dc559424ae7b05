"""The detection trainer's choice of ``jit_compile`` per backend from ``--jit_compile`` (the
runs themselves: tests/scripts/test_train_maskrcnn*.py and test_torch_backend.py)."""

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
