"""What the Keras backend computes on, for the lambda layer's ``implementation="auto"``: a GPU or
TPU, and on a CPU under TensorFlow, whether TensorFlow's oneDNN kernels are on.

TensorFlow turns oneDNN on by default only on CPUs with AVX-512 VNNI/BF16 or AMX, or when
``TF_ENABLE_ONEDNN_OPTS=1``, which importing ``lambda_keras`` before TensorFlow sets
([`lambda_keras.backend.onednn`][lambda_keras.backend.onednn]: why, and what it measured). The
TensorFlow question is asked only when TensorFlow is the backend, so it is already imported; the
layers import no TensorFlow.
"""

from __future__ import annotations

from functools import cache

import keras

from lambda_keras.backend import onednn

__all__ = ["cpu_kind", "has_accelerator", "warn_if_slow_convolutions"]


@cache
def has_accelerator() -> bool:
    """Whether Keras' backend computes on a GPU or TPU."""
    if keras.backend.backend() == "torch":  # keras.distribution has no PyTorch devices
        import torch

        return torch.cuda.is_available()
    return not keras.distribution.list_devices()[0].startswith("cpu")


@cache
def cpu_kind() -> str:
    """The backend's name on a CPU, ``"tensorflow_without_onednn"`` for TensorFlow without
    oneDNN (e.g. AVX2-only CPUs, or ``TF_ENABLE_ONEDNN_OPTS=0``)."""
    backend = keras.backend.backend()
    if backend == "tensorflow":
        from tensorflow.python.util import _pywrap_util_port

        if not _pywrap_util_port.IsMklEnabled():
            return "tensorflow_without_onednn"
    return backend


def warn_if_slow_convolutions() -> None:
    """Warns once per process when the lambda convolution runs on TensorFlow without oneDNN on
    a CPU (lambda_keras/backend/onednn.py)."""
    if cpu_kind() == "tensorflow_without_onednn" and not has_accelerator():
        onednn.warn_slow_convolutions()
