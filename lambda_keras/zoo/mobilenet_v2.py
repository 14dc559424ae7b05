"""MobileNetV2 (Sandler et al., 2018) and MobileNetV2 with lightweight lambda blocks (paper
App. E.4.2, Table 17).

A lightweight lambda block replaces the inverted bottleneck's depthwise convolution with a lambda
convolution (scope 5x5, |k|=32, |h|=4) and keeps the channel count in the first pointwise
convolution instead of expanding it. ``LambdaMobileNetV2`` replaces the 10th and 16th of the 17
inverted bottlenecks (the last 64- and the last 160-channel blocks) this way.
"""

from __future__ import annotations

import keras

from lambda_keras import _validation as v
from lambda_keras.layers import BatchNormalization, LambdaLayer
from lambda_keras.layers.implementation_choice import IMPLEMENTATIONS
from lambda_keras.zoo import applications
from lambda_keras.zoo.registry import register_model

__all__ = ["LambdaMobileNetV2", "MobileNetV2", "decode_predictions", "preprocess_input"]

# (expansion t, output channels c, repeats n, first stride s), Sandler et al. Table 2.
STAGES = (
    (1, 16, 1, 1),
    (6, 24, 2, 2),
    (6, 32, 3, 2),
    (6, 64, 4, 2),
    (6, 96, 3, 1),
    (6, 160, 3, 2),
    (6, 320, 1, 1),
)
PAPER_LAMBDA_BLOCKS = (10, 16)
BN = {"momentum": 0.99, "epsilon": 1e-3}

preprocess_input = applications.preprocess_input
decode_predictions = applications.decode_predictions


def make_divisible(value: float, divisor: int = 8) -> int:
    """Round channels to a multiple of ``divisor``, never more than 10% below ``value``."""
    rounded = max(divisor, int(value + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * value else rounded


def _block_channels(block: int) -> int:
    """Output channels (before the width multiplier) of the 1-indexed inverted bottleneck."""
    ends = 0
    for _, channels, repeats, _ in STAGES:
        ends += repeats
        if block <= ends:
            return channels
    raise ValueError(f"MobileNetV2 has {ends} inverted bottlenecks; received block {block}.")


def _bn_relu6(x, name):
    x = BatchNormalization(name=f"{name}_bn", **BN)(x)
    return keras.layers.ReLU(6.0, name=f"{name}_relu")(x)


def _pointwise(x, filters, name):
    return keras.layers.Conv2D(filters, 1, use_bias=False, name=name)(x)


def inverted_bottleneck(x, expansion: int, filters: int, strides: int, name: str):
    """Expand (1x1), depthwise 3x3, project (1x1, linear); residual when shapes allow."""
    channels = x.shape[-1]
    y = x
    if expansion != 1:
        y = _bn_relu6(_pointwise(y, expansion * channels, f"{name}_expand"), f"{name}_expand")
    if strides == 2:
        y = keras.layers.ZeroPadding2D(((0, 1), (0, 1)), name=f"{name}_pad")(y)
    y = keras.layers.DepthwiseConv2D(
        3,
        strides=strides,
        padding="valid" if strides == 2 else "same",
        use_bias=False,
        name=f"{name}_depthwise",
    )(y)
    y = _bn_relu6(y, f"{name}_depthwise")
    y = _pointwise(y, filters, f"{name}_project")
    y = BatchNormalization(name=f"{name}_project_bn", **BN)(y)
    if strides == 1 and channels == filters:
        y = keras.layers.Add(name=f"{name}_add")([x, y])
    return y


def lambda_block(x, filters: int, name: str, lambda_options: dict):
    """Lightweight lambda block: 1x1 (same channels), lambda convolution, 1x1 (linear).

    ``lambda_options``: the lambda layer's ``key_dim``, ``num_heads``, ``scope_size`` and
    ``implementation``.
    """
    channels = x.shape[-1]
    y = _bn_relu6(_pointwise(x, channels, f"{name}_expand"), f"{name}_expand")
    y = LambdaLayer(channels, name=f"{name}_lambda", **lambda_options)(y)
    y = _bn_relu6(y, f"{name}_lambda")
    y = _pointwise(y, filters, f"{name}_project")
    y = BatchNormalization(name=f"{name}_project_bn", **BN)(y)
    if channels == filters:
        y = keras.layers.Add(name=f"{name}_add")([x, y])
    return y


def _replaceable_blocks() -> list[int]:
    """The 1-indexed blocks that keep their shape (stride 1, same channels in and out)."""
    replaceable, block, channels_in = [], 0, 16
    for expansion, channels, repeats, stride in STAGES:
        for i in range(repeats):
            block += 1
            if (stride == 1 or i > 0) and channels == channels_in and expansion != 1:
                replaceable.append(block)
            channels_in = channels
    return replaceable


def _check_lambda_blocks(lambda_blocks, alpha: float, lambda_options: dict) -> None:
    """Fail on blocks that cannot be lambda blocks, or bad lambda hyper-parameters, before any
    layer is built."""
    replaceable = _replaceable_blocks()
    if any(not v.is_int(block) or block not in replaceable for block in lambda_blocks):
        raise ValueError(
            "`lambda_blocks` holds the 1-indexed numbers (ints) of inverted bottlenecks that keep "
            f"their shape (stride 1, same channels in and out): {replaceable}; received "
            f"lambda_blocks={tuple(lambda_blocks)}."
        )
    if not lambda_blocks:
        return
    num_heads = v.positive_int("num_heads", lambda_options["num_heads"])
    v.positive_int("key_dim", lambda_options["key_dim"])
    v.scope("scope_size", lambda_options["scope_size"])
    v.implementation(lambda_options["implementation"], IMPLEMENTATIONS, intra_depth=1)
    for block in lambda_blocks:
        channels = make_divisible(_block_channels(block) * alpha)
        v.divisible("dim_out", channels, "num_heads", num_heads)


def _mobilenet_v2(
    app: applications.ApplicationArgs,
    *,
    architecture: str,
    lambda_blocks: tuple[int, ...],
    alpha: float,
    dropout_rate: float,
    lambda_options: dict,
) -> keras.Model:
    v.positive_number("alpha", alpha)
    _check_lambda_blocks(lambda_blocks, alpha, lambda_options)

    def body(x):
        x = keras.layers.ZeroPadding2D(((0, 1), (0, 1)), name="stem_pad")(x)
        x = keras.layers.Conv2D(
            make_divisible(32 * alpha), 3, strides=2, use_bias=False, name="stem_conv"
        )(x)
        x = _bn_relu6(x, "stem")
        block = 0
        for expansion, channels, repeats, stride in STAGES:
            filters = make_divisible(channels * alpha)
            for i in range(repeats):
                block += 1
                strides = stride if i == 0 else 1
                if block in lambda_blocks:
                    x = lambda_block(x, filters, f"block{block}", lambda_options)
                else:
                    x = inverted_bottleneck(x, expansion, filters, strides, f"block{block}")
        last = make_divisible(1280 * alpha) if alpha > 1.0 else 1280
        x = _pointwise(x, last, "head_conv")
        x = BatchNormalization(name="head_bn", **BN)(x)
        return keras.layers.ReLU(6.0, name="features")(x)

    return applications.build(app, architecture=architecture, body=body, dropout_rate=dropout_rate)


@register_model("mobilenet_v2")
def MobileNetV2(
    include_top: bool = True,
    weights: str | None = None,
    input_tensor=None,
    input_shape: tuple | None = None,
    pooling: str | None = None,
    classes: int = 1000,
    classifier_activation="softmax",
    name: str | None = None,
    *,
    alpha: float = 1.0,
    dropout_rate: float = 0.2,
) -> keras.Model:
    """Instantiates MobileNetV2 (the paper's Table 17 baseline: 3.50M parameters at alpha 1).

    ``include_top``, ``weights``, ``input_tensor``, ``input_shape``, ``pooling``, ``classes``,
    ``classifier_activation`` and ``name`` are as in ``keras.applications``
    (default input 224x224x3).

    Args:
        alpha: Width multiplier.
        dropout_rate: Dropout before the classifier (0.2, App. F.3).
    """
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
    return _mobilenet_v2(
        app,
        architecture="mobilenet_v2",
        lambda_blocks=(),
        alpha=alpha,
        dropout_rate=dropout_rate,
        lambda_options={},
    )


@register_model("lambda_mobilenet_v2")
def LambdaMobileNetV2(
    include_top: bool = True,
    weights: str | None = None,
    input_tensor=None,
    input_shape: tuple | None = None,
    pooling: str | None = None,
    classes: int = 1000,
    classifier_activation="softmax",
    name: str | None = None,
    *,
    alpha: float = 1.0,
    dropout_rate: float = 0.2,
    lambda_blocks: tuple[int, ...] = PAPER_LAMBDA_BLOCKS,
    key_dim: int = 32,
    num_heads: int = 4,
    scope_size: int = 5,
    implementation: str = "auto",
) -> keras.Model:
    """Instantiates MobileNetV2 with lightweight lambda blocks (3.21M parameters at alpha 1).

    ``include_top``, ``weights``, ``input_tensor``, ``input_shape``, ``pooling``, ``classes``,
    ``classifier_activation`` and ``name`` are as in ``keras.applications``
    (default input 224x224x3).

    Args:
        alpha: Width multiplier.
        dropout_rate: Dropout before the classifier (0.2, App. F.3).
        lambda_blocks: 1-indexed inverted bottlenecks replaced by lambda blocks (paper: 10, 16);
            they must be stride-1 blocks.
        key_dim, num_heads, scope_size, implementation: The lambda convolution (paper: 32, 4,
            5x5).
    """
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
    lambda_options = {
        "key_dim": key_dim,
        "num_heads": num_heads,
        "scope_size": scope_size,
        "implementation": implementation,
    }
    return _mobilenet_v2(
        app,
        architecture="lambda_mobilenet_v2",
        lambda_blocks=v.sequence(
            "lambda_blocks", lambda_blocks, "a list of 1-indexed block numbers", unordered=True
        ),
        alpha=alpha,
        dropout_rate=dropout_rate,
        lambda_options=lambda_options,
    )
