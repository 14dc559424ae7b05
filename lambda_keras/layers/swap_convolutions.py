"""Replace the 3x3 convolutions of any functional Keras CNN with lambda convolutions.

The paper's first experiment (Table 3) is exactly this swap on a ResNet-50; Table 12 swaps
only some stages.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import keras

from lambda_keras import _validation as v
from lambda_keras.layers.lambda_conv import LambdaConv2D

__all__ = ["swap_convolutions"]


def _is_square_3x3(layer) -> bool:
    return type(layer) is keras.layers.Conv2D and tuple(layer.kernel_size) == (3, 3)


def _stage(name: str) -> str:
    """``"conv4_block1_2_conv"`` -> ``"conv4"``: the name up to the first underscore."""
    return name.split("_", 1)[0]


def swap_convolutions(
    model: keras.Model,
    stages: Sequence[str] | None = None,
    predicate: Callable[[keras.layers.Conv2D], bool] | None = None,
    *,
    kernel_size: int = 23,
    key_dim: int = 16,
    num_heads: int = 4,
    intra_depth: int = 1,
    implementation: str = "auto",
) -> keras.Model:
    """A new functional model in which chosen 3x3 ``Conv2D`` layers are lambda convolutions.

    Each chosen ``Conv2D(filters, 3, strides=s)`` becomes a
    [`LambdaConv2D`][lambda_keras.layers.LambdaConv2D] ``(filters, kernel_size, strides=s)`` of the
    same name, so the output shapes are unchanged. Only plain ``keras.layers.Conv2D`` layers with a
    3x3 kernel, ``padding="same"``, stride 1 or 2, no dilation and no activation are chosen; the
    model is rebuilt with ``keras.models.clone_model(..., clone_function=...)`` and every
    other layer keeps its weights. The swapped layers start from the lambda layer's
    initialisation; the convolution's bias, if any, is dropped (batch norm follows it in a ResNet).

    Args:
        model: A functional (or Sequential) Keras model, e.g.
            ``keras.applications.ResNet50(weights=None)``.
        stages: Swap only 3x3 convs whose layer name starts with one of these prefixes followed
            by ``_`` (``("conv4", "conv5")`` in ``keras.applications`` ResNets: Table 12's
            C→C→L→L); ``None``: every stage.
        predicate: Optional further choice: called with each candidate conv, swapped when True.
        kernel_size: Scope of the lambda convolutions (paper default 23).
        key_dim: Their ``|k|`` (16).
        num_heads: Their ``|h|`` (4).
        intra_depth: Their ``|u|`` (1).
        implementation: Their implementation (``"auto"``).

    Returns:
        The new ``keras.Model``.

    Raises:
        ValueError: the model has no 3x3 ``Conv2D``, a stage names no layer, or nothing is
            chosen.
        TypeError: ``model`` is not a Keras model or ``predicate`` is not callable.

    Examples:
        >>> import keras
        >>> from lambda_keras.layers import LambdaConv2D, swap_convolutions
        >>> resnet = keras.applications.ResNet50(weights=None)
        >>> # Table 12: C-C-L-L
        >>> hybrid = swap_convolutions(resnet, stages=("conv4", "conv5"))
        >>> sum(isinstance(layer, LambdaConv2D) for layer in hybrid.layers)
        9
        >>> resnet.count_params(), hybrid.count_params()
        (25636712, 15639032)
    """
    if not isinstance(model, keras.Model):
        raise TypeError(f"`model` must be a keras.Model; received {type(model).__name__}.")
    if predicate is not None and not callable(predicate):
        raise TypeError(f"`predicate` must be callable; received {predicate!r}.")
    candidates = [layer for layer in model.layers if _is_square_3x3(layer)]
    if not candidates:
        raise ValueError(f"Model {model.name!r} has no 3x3 Conv2D layer to swap.")
    chosen = _choose(candidates, stages, predicate, model.name)
    num_heads = v.positive_int("num_heads", num_heads)  # named before 8 * num_heads below
    options = dict(
        kernel_size=kernel_size,
        key_dim=key_dim,
        num_heads=num_heads,
        intra_depth=intra_depth,
        implementation=implementation,
    )
    LambdaConv2D(8 * num_heads, **options)  # bad lambda arguments fail before any cloning

    def clone(layer):
        if layer.name in chosen:
            return LambdaConv2D(layer.filters, strides=layer.strides[0], name=layer.name, **options)
        return layer.__class__.from_config(layer.get_config())

    swapped = keras.models.clone_model(model, clone_function=clone)
    for layer in swapped.layers:
        if layer.name not in chosen and layer.weights:
            layer.set_weights(model.get_layer(layer.name).get_weights())
    return swapped


def _choose(candidates, stages, predicate, model_name) -> set[str]:
    """Names of the candidate convs to swap."""
    if isinstance(stages, str):
        stages = (stages,)
    if stages is not None:
        stages = v.sequence("stages", stages, "a stage name or a list of them", unordered=True)
        known = sorted({_stage(layer.name) for layer in candidates})
        unknown = [s for s in stages if not any(c.name.startswith(f"{s}_") for c in candidates)]
        if unknown:
            raise ValueError(
                f"`stages` {unknown} name no 3x3 Conv2D of {model_name!r}; its 3x3 convs are "
                f"in the stages {known}."
            )
        candidates = [c for c in candidates if any(c.name.startswith(f"{s}_") for s in stages)]
    chosen = []
    for layer in candidates:
        if predicate is not None and not predicate(layer):
            continue
        _check_swappable(layer)
        chosen.append(layer.name)
    if not chosen:
        raise ValueError(f"No 3x3 Conv2D of {model_name!r} was chosen (stages={stages!r}).")
    return set(chosen)


def _check_swappable(layer) -> None:
    strides = tuple(layer.strides)
    problems = []
    if strides not in ((1, 1), (2, 2)):
        problems.append(f"strides={strides} (1 or 2 only)")
    if layer.padding != "same":
        problems.append(f"padding={layer.padding!r} (the lambda convolution keeps the size)")
    if tuple(layer.dilation_rate) != (1, 1):
        problems.append(f"dilation_rate={tuple(layer.dilation_rate)}")
    if layer.activation is not keras.activations.linear:
        problems.append(f"activation={layer.activation.__name__}")
    if layer.groups != 1:
        problems.append(f"groups={layer.groups}")
    if problems:
        raise ValueError(
            f"Conv2D {layer.name!r} cannot become a lambda convolution: {', '.join(problems)}. "
            "Leave it out with `stages` or `predicate`."
        )
