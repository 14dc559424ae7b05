"""The parts of the project that run on TensorFlow alone say so when Keras runs on another backend.

``lambda_keras.layers`` and ``lambda_keras.zoo`` run on JAX, TensorFlow and PyTorch; the training
package runs on TensorFlow and JAX (``tf.data`` input on both); ``lambda_keras.detection`` uses
TensorFlow ops on Keras tensors and needs Keras on TensorFlow.
"""

from __future__ import annotations

import keras

__all__ = ["check_backend"]


def check_backend(package: str) -> None:
    """Raise ``ImportError`` naming the backend ``package`` needs, unless Keras runs on it."""
    backend = keras.backend.backend()
    if backend != "tensorflow":
        raise ImportError(
            f"{package} needs Keras on the TensorFlow backend (KERAS_BACKEND=tensorflow, set "
            f"before Keras is imported); this process runs Keras on {backend!r}. "
            "lambda_keras.layers and lambda_keras.zoo run on every backend."
        )
