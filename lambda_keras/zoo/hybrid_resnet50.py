"""Vanilla ResNet-50 with a per-stage choice of 3x3 convolutions or lambda layers.

The architecture of the paper's ResNet-50 studies (Table 3, Table 8, Table 12; the 90-epoch
set-up of App. F.3 uses "the vanilla ResNet"): the original 7x7 stem and max-pool, bottlenecks
with the stride on the 3x3 conv, strided 1x1 projection shortcuts, no squeeze-and-excitation,
zero-initialised last batch-norm gamma. ``layout`` names, for the stages c2..c5, ``C`` (3x3
convolutions) or ``L`` (lambda layers): ``"CCCC"`` is ResNet-50, ``"LLLL"`` replaces every 3x3
conv (15.0M parameters in the paper), ``"CCLL"`` is the LambdaResNet-C4-style hybrid.
"""

from __future__ import annotations

import keras

from lambda_keras.zoo import applications
from lambda_keras.zoo.registry import register_model
from lambda_keras.zoo.resnet_blocks import LambdaConfig, NormConfig, bottleneck, classic_stem

__all__ = ["ResNet50", "decode_predictions", "preprocess_input"]

BLOCKS = (3, 4, 6, 3)
WIDTHS = (64, 128, 256, 512)

preprocess_input = applications.preprocess_input
decode_predictions = applications.decode_predictions


def _check_layout(layout) -> str:
    if (
        not isinstance(layout, str)
        or len(layout) != 4
        or any(c not in "CL" for c in layout.upper())
    ):
        raise ValueError(
            "`layout` must be 4 letters, C (convolution) or L (lambda layer), one per stage "
            f"c2..c5, e.g. 'CCLL'; received layout={layout!r}."
        )
    return layout.upper()


@register_model("resnet50")
def ResNet50(
    include_top: bool = True,
    weights: str | None = None,
    input_tensor=None,
    input_shape: tuple | None = None,
    pooling: str | None = None,
    classes: int = 1000,
    classifier_activation="softmax",
    name: str | None = None,
    *,
    layout: str = "CCCC",
    dropout_rate: float = 0.0,
    key_dim: int = 16,
    num_heads: int = 4,
    intra_depth: int = 1,
    scope_size: int | None = None,
    implementation: str = "auto",
) -> keras.Model:
    """Instantiates a vanilla ResNet-50 with lambda layers in the stages ``layout`` says.

    ``include_top``, ``weights``, ``input_tensor``, ``input_shape``, ``pooling``, ``classes``,
    ``classifier_activation`` and ``name`` are as in ``keras.applications``
    (``weights``: None, a registered name or a ``.weights.h5`` path; default input 224x224x3).

    Args:
        layout: 4 letters for c2..c5, ``C`` (3x3 conv) or ``L`` (lambda layer).
        dropout_rate: Dropout before the classifier (none in the 90-epoch set-up).
        key_dim, num_heads, intra_depth, implementation: Lambda layer hyper-parameters
            (paper defaults 16, 4, 1, ``"auto"``).
        scope_size: Local scope of the lambda layers; default 23, or 7 when
            ``intra_depth > 1`` (App. F.2: "we ... reduce the scope size to 7x7").

    Returns:
        A ``keras.Model``.
    """
    layout = _check_layout(layout)
    if scope_size is None:
        scope_size = 23 if intra_depth == 1 else 7
    config = LambdaConfig(key_dim, num_heads, intra_depth, scope_size, implementation)
    norm = NormConfig()

    def body(x):
        x = classic_stem(x, norm)
        for stage, (blocks, width) in enumerate(zip(BLOCKS, WIDTHS, strict=True)):
            for block in range(1, blocks + 1):
                x = bottleneck(
                    x,
                    width,
                    strides=2 if block == 1 and stage > 0 else 1,
                    use_lambda=layout[stage] == "L",
                    lambda_config=config,
                    norm=norm,
                    resnet_d_shortcut=False,
                    name=f"c{stage + 2}_block{block}",
                    output_name="features" if stage == 3 and block == blocks else None,
                )
        return x

    suffix = "" if layout == "CCCC" else "_" + layout.lower()
    name = name or "resnet50" + suffix
    app = applications.ApplicationArgs(
        include_top,
        weights,
        input_tensor,
        input_shape,
        pooling,
        classes,
        classifier_activation,
        name,
    )
    return applications.build(
        app,
        architecture="resnet50" + suffix + (f"_u{intra_depth}" if intra_depth > 1 else ""),
        body=body,
        dropout_rate=dropout_rate,
    )
