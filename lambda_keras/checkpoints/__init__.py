"""PyTorch and safetensors checkpoint files read into NumPy, without PyTorch: the one reader of
timm's ([convert_timm][lambda_keras.zoo.convert_timm]) and torchvision's
([convert_torchvision][lambda_keras.detection.convert_torchvision]) checkpoints. PyTorch's own
formats are read by [load_pytorch][lambda_keras.checkpoints.pytorch.load_pytorch], a restricted
unpickler."""

from __future__ import annotations

import os

import numpy as np

from lambda_keras.checkpoints.pytorch import UnsafeCheckpointError, load_pytorch

__all__ = ["UnsafeCheckpointError", "load_pytorch", "read_checkpoint"]


def read_checkpoint(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """A checkpoint's tensors as ``{name: float32 array}``, read with NumPy alone.

    Args:
        path: A ``.safetensors`` file (the ``safetensors`` package), or a ``torch.save``
            file (``.bin``, ``.pth``, ``.pt``; read by
            [load_pytorch][lambda_keras.checkpoints.pytorch.load_pytorch], no PyTorch). A
            training script's ``{"model": state, ...}`` or ``{"state_dict": state, ...}`` is
            unwrapped.

    Raises:
        ValueError: not a file, another suffix, a damaged file, or a complex tensor.
        UnsafeCheckpointError: a ``torch.save`` file whose pickle names anything but tensors
            and plain containers (nothing was imported or called).
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise ValueError(f"`checkpoint` {path!r} is not a file.")
    if path.endswith(".safetensors"):
        return _read_safetensors(path)
    if path.endswith((".bin", ".pth", ".pt")):
        state = load_pytorch(path)
        for wrapper in ("model", "state_dict"):  # training scripts' {"model": state, ...}
            if isinstance(state, dict) and isinstance(state.get(wrapper), dict):
                state = state[wrapper]
        if not isinstance(state, dict):
            raise ValueError(
                f"{path!r} holds a {type(state).__name__}, not a state dict {{name: tensor}}."
            )
        return _as_float32(state, path)
    raise ValueError(
        f"`checkpoint` must be a .safetensors, .bin, .pth or .pt file; received {path!r}."
    )


def _as_float32(state: dict, path: str) -> dict[str, np.ndarray]:
    """The state's tensors as float32; a complex tensor is refused (no model here has one)."""
    arrays = {name: value for name, value in state.items() if isinstance(value, np.ndarray)}
    for name, value in arrays.items():
        if value.dtype.kind == "c":
            raise ValueError(f"{path!r}: tensor {name!r} is complex ({value.dtype}), not a weight.")
    return {name: value.astype(np.float32) for name, value in arrays.items()}


def _read_safetensors(path: str) -> dict[str, np.ndarray]:
    try:
        from safetensors.numpy import load_file
    except ImportError as err:
        raise ImportError(
            'Reading .safetensors needs the safetensors package: pip install "lambda-keras[timm]".'
        ) from err
    try:
        return dict(load_file(path))
    except Exception as err:  # safetensors raises its own error types
        raise ValueError(f"{path!r} is not a readable .safetensors file: {err}") from err
