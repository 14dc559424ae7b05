"""The one guard of the packages that need TensorFlow: it names what to install, or which Keras
backend to choose, when the package is imported where it cannot run.

``lambda_keras.layers`` and ``lambda_keras.zoo`` run on JAX, TensorFlow and PyTorch and need no
guard; the training package reads its data with ``tf.data`` on TensorFlow and JAX alike (so
TensorFlow must be installed); ``lambda_keras.detection.ops`` runs on every backend, the rest of
``lambda_keras.detection`` still uses TensorFlow ops and needs Keras on TensorFlow.
"""

from __future__ import annotations

import keras

__all__ = ["require_tensorflow"]

_NAMES = {"tensorflow": "TensorFlow", "jax": "JAX", "torch": "PyTorch"}


def require_tensorflow(package: str, why: str, backends: tuple[str, ...] | None = None) -> None:
    """Raise ``ImportError`` unless TensorFlow is installed and, when ``backends`` is given,
    Keras runs on one of them.

    Args:
        package: The package that asks (named in the message).
        why: What the package uses TensorFlow for (named in the message).
        backends: The Keras backends the package runs on; None for any.
    """
    backend = keras.backend.backend()
    if backends is not None and backend not in backends:
        names = " or ".join(_NAMES.get(b, b) for b in backends)
        raise ImportError(
            f"{package} {why} and needs Keras on the {names} backend "
            f"(KERAS_BACKEND={backends[0]}, set before Keras is imported); this process runs "
            f"Keras on {backend!r}. lambda_keras.layers and lambda_keras.zoo run on every "
            "backend."
        )
    try:
        import tensorflow  # noqa: F401  (the package uses it at once)
    except ImportError as error:
        raise ImportError(
            f"{package} {why} and needs TensorFlow installed, whatever Keras' backend: pip "
            "install 'lambda-keras[jax]' (JAX with tensorflow-cpu) or 'lambda-keras[cpu]'."
        ) from error
