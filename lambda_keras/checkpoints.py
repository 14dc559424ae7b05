"""PyTorch and safetensors checkpoint files read into NumPy: the one reader of timm's
(:mod:`lambda_keras.zoo.convert_timm`) and torchvision's
(:mod:`lambda_keras.detection.convert_torchvision`) checkpoints."""

from __future__ import annotations

import os

import numpy as np

__all__ = ["read_checkpoint"]


def read_checkpoint(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """A checkpoint as ``{name: float32 array}``: ``.safetensors`` (NumPy only) or
    ``.bin``/``.pth``/``.pt`` (needs PyTorch; a training script's ``{"model": state}`` or
    ``{"state_dict": state}`` is unwrapped)."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise ValueError(f"`checkpoint` {path!r} is not a file.")
    if path.endswith(".safetensors"):
        try:
            from safetensors.numpy import load_file
        except ImportError as err:
            raise ImportError(
                "Reading .safetensors needs the safetensors package: "
                'pip install "lambda-keras[timm]".'
            ) from err
        try:
            return dict(load_file(path))
        except Exception as err:  # safetensors raises its own error types
            raise ValueError(f"{path!r} is not a readable .safetensors file: {err}") from err
    if path.endswith((".bin", ".pth", ".pt")):
        try:
            import torch
        except ImportError as err:
            raise ImportError(
                f"Reading {path!r} needs PyTorch (pip install torch); a .safetensors file "
                "needs NumPy only."
            ) from err
        state = torch.load(path, map_location="cpu", weights_only=True)
        for wrapper in ("model", "state_dict"):  # training scripts' {"model": state, ...}
            if isinstance(state.get(wrapper), dict):
                state = state[wrapper]
        return {k: t.float().numpy() for k, t in state.items() if hasattr(t, "float")}
    raise ValueError(
        f"`checkpoint` must be a .safetensors, .bin, .pth or .pt file; received {path!r}."
    )
