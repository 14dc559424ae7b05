"""Model registry, as in timm: ``list_models()`` and ``get_model(name, **kwargs)``."""

from __future__ import annotations

import difflib
import fnmatch
from collections.abc import Callable

import keras

from lambda_keras.zoo import hybrid_resnet50, lambda_resnet, mobilenet_v2

__all__ = ["get_model", "list_models", "model_builder"]


def _models() -> dict[str, Callable[..., keras.Model]]:
    models = {}
    for depth in lambda_resnet.BLOCKS:
        models[f"lambda_resnet{depth}"] = getattr(lambda_resnet, f"LambdaResNet{depth}")
        models[f"lambda_resnet{depth}_c4"] = getattr(lambda_resnet, f"LambdaResNet{depth}C4")
        models[f"resnet_rs{depth}"] = getattr(lambda_resnet, f"ResNetRS{depth}")
    models["resnet50"] = hybrid_resnet50.ResNet50
    models["mobilenet_v2"] = mobilenet_v2.MobileNetV2
    models["lambda_mobilenet_v2"] = mobilenet_v2.LambdaMobileNetV2
    return models


_MODELS = _models()


def list_models(pattern: str = "*") -> list[str]:
    """Registered model names matching a shell-style ``pattern`` (e.g. ``"lambda_resnet*"``)."""
    return sorted(name for name in _MODELS if fnmatch.fnmatch(name, pattern))


def model_builder(name: str) -> Callable[..., keras.Model]:
    """The builder function registered as ``name``."""
    if name not in _MODELS:
        close = difflib.get_close_matches(name, _MODELS, n=3)
        hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise ValueError(f"Unknown model {name!r}.{hint} Known models: {', '.join(list_models())}.")
    return _MODELS[name]


def get_model(name: str, **kwargs) -> keras.Model:
    """Build the model registered as ``name``; ``kwargs`` go to its builder.

    Example: ``get_model("resnet_rs101", se=False, include_top=False, pooling="avg")``.
    """
    return model_builder(name)(**kwargs)
