"""The guards of what the project needs installed: TensorFlow for the packages that use it, and
on Keras' PyTorch backend a PyTorch no older than the oldest the project is tested on.

``lambda_keras.layers`` and ``lambda_keras.zoo`` run on JAX, TensorFlow and PyTorch and need no
guard; the training package reads its data with ``tf.data`` on TensorFlow and JAX alike (so
TensorFlow must be installed), and so does ``lambda_keras.training.detection.datasets``; the
SavedModel writers (``lambda_keras.zoo.serving``, ``lambda_keras.detection.serving`` and its
graph resizing, ``lambda_keras.detection.transform_graph``) need it too; the rest of
``lambda_keras.detection`` runs on every backend.
"""

from __future__ import annotations

__all__ = ["TORCHVISION_FLOOR", "TORCH_FLOOR", "require_torch_floor", "require_tensorflow"]

TORCH_FLOOR = "2.11.0"
"""The oldest PyTorch the project supports: the release GPU images ship today (the H100 image of
the first accelerator run), and the one CI installs (``.ci/run``) and runs every PyTorch test on;
the developers' own runs use the newest (the changelog names both). ``setup.py`` reads it for the
``[torch]`` extra; docs/backends.md says why."""
TORCHVISION_FLOOR = "0.26.0"
"""torchvision's release for ``TORCH_FLOOR`` (its NMS kernel serves ``ops.nms`` on PyTorch; the
tests compare the detectors with torchvision's)."""


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


def require_torch_floor(installed: str | None = None) -> None:
    """Raise ``ImportError`` when Keras' PyTorch backend would run on a PyTorch older than
    [`TORCH_FLOOR`][lambda_keras.backend.requirements.TORCH_FLOOR]. ``lambda_keras`` asks when it
    is imported on that backend, before anything is built.

    Args:
        installed: The PyTorch version to check (``torch.__version__`` when None).
    """
    from packaging.version import Version

    if installed is None:
        import torch

        installed = torch.__version__
    # The release numbers: "2.11.0+cu130", and NVIDIA's "2.11.0a0+<commit>" builds, pass.
    if Version(installed).release < Version(TORCH_FLOOR).release:
        raise ImportError(
            f"lambda_keras on Keras' PyTorch backend needs PyTorch >= {TORCH_FLOOR}; installed: "
            f"{installed}. pip install 'lambda-keras[torch]' (PyTorch >= {TORCH_FLOOR}, "
            f"torchvision >= {TORCHVISION_FLOOR})."
        )
