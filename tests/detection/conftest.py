"""The detection tests leave glibc's allocator as it is: `detect` on a CPU on JAX and PyTorch
would set it for the whole test process, so later tests would run under other settings than
when run alone. What `detect` sets is tested in tests/backend/test_glibc_heap.py (in a process
of its own) and tests/detection/test_detect.py."""

import pytest


@pytest.fixture(autouse=True)
def _glibc_left_alone(monkeypatch):
    monkeypatch.setenv("LAMBDA_KERAS_GLIBC_HEAP", "0")
