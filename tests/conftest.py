"""Test session set-up: quiet TensorFlow, deterministic seeds, float32 policy restored, and how
pytest-xdist spreads the tests over worker processes."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras
import pytest


@pytest.fixture(autouse=True)
def _seed_and_policy():
    keras.utils.set_random_seed(1234)
    yield
    keras.config.set_dtype_policy("float32")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: long checks, excluded from the default run")
    config.addinivalue_line(
        "markers",
        "end_to_end: whole training runs, scripts and notebooks (deselect with "
        "-m 'not slow and not end_to_end' for a quick run while iterating)",
    )
    config.addinivalue_line(
        "markers",
        "tensorflow: needs TensorFlow itself (tf.function, SavedModel, tf.data); skipped when "
        "the tests run on another Keras backend (tests/test_backends.py)",
    )


def pytest_collection_modifyitems(config, items):
    if keras.backend.backend() == "tensorflow":
        return
    skip = pytest.mark.skip(reason=f"needs the TensorFlow backend, not {keras.backend.backend()}")
    for item in items:
        if "tensorflow" in item.keywords:
            item.add_marker(skip)


def pytest_xdist_auto_num_workers(config):
    """``-n auto``: one worker per core, at most 4 (each imports TensorFlow and trains models:
    a few GB of memory apiece)."""
    return max(1, min(os.cpu_count() or 1, 4))
