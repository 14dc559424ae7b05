"""Model registry, as in timm: ``@register_model``, ``list_models()`` and ``get_model()``.

Every public builder of the zoo is a module-level ``def`` decorated with
``@register_model("registry_name", ...)``. The decorator records a
[`ModelInfo`][lambda_keras.zoo.registry.ModelInfo] — the builder, the frozen architecture record it
reads and the paper's Table 20 regularisation of its depth — and completes the builder's docstring
with its family's shared argument documentation (as ``keras.applications`` does). The registry fills
up when [`lambda_keras.zoo`][lambda_keras.zoo] is imported, which importing any of its modules does
first.
"""

from __future__ import annotations

import dataclasses
import difflib
import fnmatch
from collections.abc import Callable
from typing import TypeVar

import keras

__all__ = [
    "ModelInfo",
    "Table20Row",
    "get_model",
    "list_models",
    "model_builder",
    "model_info",
    "register_model",
]

Builder = TypeVar("Builder", bound=Callable[..., keras.Model])


@dataclasses.dataclass(frozen=True)
class Table20Row:
    """One row of the paper's Table 20: the 350-epoch regularisation at one image size."""

    image_size: int
    randaugment_magnitude: int
    dropout_rate: float
    stochastic_depth_rate: float


@dataclasses.dataclass(frozen=True)
class ModelInfo:
    """What the registry knows of a model.

    Attributes:
        name: Registry name (``"lambda_resnet101"``).
        builder: The builder function, e.g.
            [`lambda_keras.zoo.LambdaResNet101`][lambda_keras.zoo.LambdaResNet101].
        spec: The frozen architecture record the builder reads, or None when the builder's
            arguments are the whole architecture.
        table20: The paper's Table 20 rows for the model's depth, by image size; empty for
            models Table 20 does not cover.
    """

    name: str
    builder: Callable[..., keras.Model]
    spec: object = None
    table20: tuple[Table20Row, ...] = ()

    def table20_row(self, image_size: int) -> Table20Row | None:
        """The Table 20 row at ``image_size`` or, if that size is not listed, at the nearest
        listed one (the smaller on a tie); None outside Table 20."""
        if not self.table20:
            return None
        return min(self.table20, key=lambda row: (abs(row.image_size - image_size), row.image_size))


_MODELS: dict[str, ModelInfo] = {}


def register_model(
    name: str,
    *,
    spec: object = None,
    table20: tuple[Table20Row, ...] = (),
    doc: str | None = None,
) -> Callable[[Builder], Builder]:
    """Decorator: register a builder as ``name`` and return it unchanged.

    Args:
        name: Registry name, lower case (``"lambda_resnet101"``).
        spec: The frozen architecture record the builder reads.
        table20: The Table 20 rows of the model's depth.
        doc: Appended to the builder's docstring: the family's shared argument documentation.
    """

    def decorate(builder: Builder) -> Builder:
        if name in _MODELS:
            raise ValueError(f"A model is already registered as {name!r}.")
        if doc:
            builder.__doc__ = (builder.__doc__ or "").rstrip() + "\n" + doc
        _MODELS[name] = ModelInfo(name, builder, spec, tuple(table20))
        return builder

    return decorate


def list_models(pattern: str = "*") -> list[str]:
    """Registered model names matching a shell-style ``pattern`` (e.g. ``"lambda_resnet*"``)."""
    if not isinstance(pattern, str):
        raise TypeError(
            f"`pattern` must be a shell-style string, e.g. 'lambda_resnet*'; received {pattern!r}."
        )
    return sorted(name for name in _MODELS if fnmatch.fnmatch(name, pattern))


def model_info(name: str) -> ModelInfo:
    """The [`ModelInfo`][lambda_keras.zoo.registry.ModelInfo] registered as ``name``.

    Raises:
        ValueError: ``name`` is not registered (the message suggests close names).
    """
    if not isinstance(name, str):
        raise TypeError(
            f"The model name must be a registered name (a str, see list_models()); received "
            f"{name!r} ({type(name).__name__})."
        )
    if name not in _MODELS:
        close = difflib.get_close_matches(name, _MODELS, n=3)
        hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise ValueError(f"Unknown model {name!r}.{hint} Known models: {', '.join(list_models())}.")
    return _MODELS[name]


def model_builder(name: str) -> Callable[..., keras.Model]:
    """The builder function registered as ``name``."""
    return model_info(name).builder


def get_model(name: str, **kwargs) -> keras.Model:
    """Build the model registered as ``name``; ``kwargs`` go to its builder.

    Examples:
        >>> from lambda_keras import zoo
        >>> model = zoo.get_model("lambda_resnet50", include_top=False, pooling="avg")
        >>> model.output_shape
        (None, 2048)
        >>> "lambda_resnet50ts" in zoo.list_models()
        True
    """
    return model_builder(name)(**kwargs)
