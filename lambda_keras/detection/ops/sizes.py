"""Integer size arithmetic that every export keeps: ceil division of non-negative sizes without
a negative floor division (tf2onnx turns TensorFlow's integer ``FloorDiv`` into ONNX's
truncating ``Div``, which rounds ``-a // b`` the other way)."""

from __future__ import annotations

from keras import ops

from lambda_keras.detection.ops._checks import Tensor

__all__ = ["ceil_divide"]


def ceil_divide(sizes: Tensor, divisor) -> Tensor:
    """``ceil(sizes / divisor)`` for non-negative integer ``sizes`` and positive ``divisor``
    (tensors or Python ints, broadcast)."""
    return ops.floor_divide(sizes + divisor - 1, divisor)
