"""The one guard of the packages that need TensorFlow: it names what to install when the package
is imported where TensorFlow is not.

``lambda_keras.layers`` and ``lambda_keras.zoo`` run on JAX, TensorFlow and PyTorch and need no
guard; the training package reads its data with ``tf.data`` on TensorFlow and JAX alike (so
TensorFlow must be installed), and so does ``lambda_keras.training.detection.datasets``; the
SavedModel writers (``lambda_keras.zoo.serving``, ``lambda_keras.detection.serving`` and its
graph resizing, ``lambda_keras.detection.transform_graph``) need it too; the rest of
``lambda_keras.detection`` runs on every backend.
"""

from __future__ import annotations

__all__ = ["require_tensorflow"]


def require_tensorflow(package: str, why: str) -> None:
    """Raise ``ImportError`` unless TensorFlow is installed (whatever Keras' backend).

    Args:
        package: The package that asks (named in the message).
        why: What the package uses TensorFlow for (named in the message).
    """
    try:
        import tensorflow  # noqa: F401  (the package uses it at once)
    except ImportError as error:
        raise ImportError(
            f"{package} {why} and needs TensorFlow installed, whatever Keras' backend: pip "
            "install 'lambda-keras[jax]' (JAX with tensorflow-cpu) or 'lambda-keras[cpu]'."
        ) from error
