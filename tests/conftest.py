"""Test session set-up: quiet TensorFlow, deterministic seeds, float32 policy restored."""

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
