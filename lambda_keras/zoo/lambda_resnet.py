"""LambdaResNets (paper App. F.2, Table 19) and their ResNet-RS baselines (Bello et al., 2021).

ResNet-RS: ResNet-D stem with the max-pool replaced by a strided 3x3 conv, ResNet-D projection
shortcuts, squeeze-and-excitation (ratio 0.25), zero-initialised last batch-norm gamma of each
block, stochastic depth and dropout. LambdaResNets replace the 3x3 convs of the Table 19 blocks
of c4 and of every c5 block with lambda layers (|k|=16, |h|=4, |u|=1, scope 23x23) followed by a
3x3 average pool of stride 2 where the block downsamples; ``-C4`` variants use lambda layers in
all of c4 and c5.

Squeeze-and-excitation in LambdaResNets: the paper removes SE from the blocks that hold a
lambda layer. Its parameter counts (Table 13: LambdaResNet-101 36.9M, -101-C4 26.0M, -152 51.4M,
-152-C4 35.1M) are matched only when the convolutional blocks of c4 carry no SE either, i.e. SE is
used in the stages without lambda layers (c2, c3) — the default here (``se_in_lambda_stages``).
"""

from __future__ import annotations

import keras

from lambda_keras.zoo import _common
from lambda_keras.zoo.resnet_blocks import (
    LambdaConfig,
    NormConfig,
    bottleneck,
    resnet_d_stem,
    scaled,
)

__all__ = ["BLOCKS", "C4_LAMBDA_BLOCKS", "decode_predictions", "preprocess_input"]

WIDTHS = (64, 128, 256, 512)
# Block allocations (He et al., 2016; Bello et al., 2021).
BLOCKS = {
    50: (3, 4, 6, 3),
    101: (3, 4, 23, 3),
    152: (3, 8, 36, 3),
    200: (3, 24, 36, 3),
    270: (4, 29, 53, 4),
    350: (4, 36, 72, 4),
    420: (4, 44, 87, 4),
}
# Table 19: the (1-indexed) c4 blocks that hold a lambda layer; every c5 block does too.
C4_LAMBDA_BLOCKS = {
    50: (3,),
    101: (6, 12, 18),
    152: (5, 10, 15, 20, 25, 30),
    200: (5, 10, 15, 20, 25, 30),
    270: (8, 16, 24, 32, 40, 48),
    350: (10, 20, 30, 40, 50, 60),
    420: (10, 20, 30, 40, 50, 60, 70, 80),
}
# Table 20 at each depth's largest listed image size: (dropout, stochastic depth rate); 200 is
# not listed and takes 152's values.
REGULARIZATION = {
    50: (0.2, 0.0),
    101: (0.2, 0.0),
    152: (0.3, 0.1),
    200: (0.3, 0.1),
    270: (0.3, 0.1),
    350: (0.3, 0.2),
    420: (0.3, 0.2),
}
DEFAULT_SIZE = 224
MIN_SIZE = 32

preprocess_input = _common.preprocess_input
decode_predictions = _common.decode_predictions


def resnet_rs_body(
    depth: int,
    lambda_blocks: tuple[tuple[int, ...], ...],
    se_stages: tuple[bool, ...],
    stochastic_depth_rate: float,
    lambda_config: LambdaConfig,
    norm: NormConfig,
    width_multiplier: float = 1.0,
):
    """Image ``[b, h, w, 3]`` -> c5 features ``[b, h/32, w/32, 2048 * width]`` (``"features"``).

    Args:
        lambda_blocks: per stage, the 1-indexed blocks whose 3x3 conv is a lambda layer.
        se_stages: per stage, whether its convolutional blocks use SE (ratio 0.25); blocks
            with a lambda layer never do.
        stochastic_depth_rate: drop rate of the last stage; stage ``s`` (0-based) uses
            ``rate * (s + 2) / 5`` (ResNet-RS).
    """

    def body(x):
        x = resnet_d_stem(x, norm, width_multiplier=width_multiplier)
        widths = [scaled(w, width_multiplier) for w in WIDTHS]
        for stage, (blocks, width) in enumerate(zip(BLOCKS[depth], widths, strict=True)):
            for block in range(1, blocks + 1):
                use_lambda = block in lambda_blocks[stage]
                last = stage == 3 and block == blocks
                x = bottleneck(
                    x,
                    width,
                    strides=2 if block == 1 and stage > 0 else 1,
                    use_lambda=use_lambda,
                    lambda_config=lambda_config,
                    norm=norm,
                    se_ratio=0.25 if se_stages[stage] and not use_lambda else 0.0,
                    drop_rate=stochastic_depth_rate * (stage + 2) / 5,
                    name=f"c{stage + 2}_block{block}",
                    output_name="features" if last else None,
                )
        return x

    return body


def _build(
    depth: int,
    variant: str,
    app: _common.ApplicationArgs,
    *,
    se: bool,
    se_in_lambda_stages: bool,
    dropout_rate: float | None,
    stochastic_depth_rate: float | None,
    lambda_config: LambdaConfig,
    width_multiplier: float = 1.0,
) -> keras.Model:
    """``variant``: ``"lambda"`` (Table 19), ``"c4"`` (all of c4 and c5) or ``"resnet_rs"``."""
    if (
        isinstance(width_multiplier, bool)
        or not isinstance(width_multiplier, (int, float))
        or (width_multiplier <= 0)
    ):
        raise ValueError(
            f"`width_multiplier` must be a positive number; received {width_multiplier!r}."
        )
    blocks = BLOCKS[depth]
    if variant == "resnet_rs":
        lambda_blocks = ((), (), (), ())
        se_stages = (se,) * 4
        architecture = f"resnet_rs{depth}"
    else:
        c4 = tuple(range(1, blocks[2] + 1)) if variant == "c4" else C4_LAMBDA_BLOCKS[depth]
        lambda_blocks = ((), (), c4, tuple(range(1, blocks[3] + 1)))
        if se_in_lambda_stages:
            se_stages = (True,) * 4
        else:
            se_stages = tuple(not stage_blocks for stage_blocks in lambda_blocks)
        architecture = f"lambda_resnet{depth}" + ("_c4" if variant == "c4" else "")
    default_dropout, default_drop_path = REGULARIZATION[depth]
    body = resnet_rs_body(
        depth,
        lambda_blocks,
        se_stages,
        default_drop_path if stochastic_depth_rate is None else stochastic_depth_rate,
        lambda_config,
        NormConfig(),
        width_multiplier,
    )
    return _common.build(
        app,
        architecture=architecture,
        body=body,
        dropout_rate=default_dropout if dropout_rate is None else dropout_rate,
        default_size=DEFAULT_SIZE,
        min_size=MIN_SIZE,
    )


_DOC = """Instantiates the {title} architecture ({source}).

    Args:
        include_top: Whether to include the classifier (global pooling, dropout, dense).
        weights: ``None`` (random initialisation), a registered weights name (see
            :func:`lambda_keras.zoo.weights.registered_weights`) or the path to a
            ``.weights.h5`` file.
        input_tensor: Optional Keras tensor to use as the image input.
        input_shape: ``(height, width, 3)``, at least 32x32; default ``(224, 224, 3)``.
        pooling: With ``include_top=False``: ``None`` (the c5 feature map
            ``[batch, h/32, w/32, 2048 * width_multiplier]``), ``"avg"`` or ``"max"``.
        classes: Number of classes of the classifier.
        classifier_activation: Activation of the classifier (``None`` for logits).
        name: Model name.
        dropout_rate: Dropout before the classifier; default from paper Table 20 ({dropout}).
        stochastic_depth_rate: Stochastic depth rate of the last stage; default from Table 20
            ({drop_path}).
        width_multiplier: Scales every stage's channels (rounded to multiples of 8), e.g.
            0.25 for quick experiments on small data; 1.0 is the paper's model.{extra}

    Returns:
        A ``keras.Model``.
"""

_LAMBDA_ARGS = """
        key_dim, num_heads, intra_depth, scope_size, implementation: The lambda layers'
            hyper-parameters (paper defaults 16, 4, 1, 23, ``"auto"``).
        se_in_lambda_stages: Also use squeeze-and-excitation in the convolutional blocks of
            the stages that hold lambda layers (default False; see the module docstring)."""

_SE_ARGS = """
        se: Whether the blocks use squeeze-and-excitation (ratio 0.25)."""


def _finish(builder, name: str, title: str, source: str, depth: int, extra: str):
    dropout, drop_path = REGULARIZATION[depth]
    builder.__name__ = builder.__qualname__ = name
    builder.__doc__ = _DOC.format(
        title=title, source=source, dropout=dropout, drop_path=drop_path, extra=extra
    )
    return builder


def _make_lambda_builder(depth: int, c4: bool):
    def builder(
        include_top: bool = True,
        weights: str | None = None,
        input_tensor=None,
        input_shape: tuple | None = None,
        pooling: str | None = None,
        classes: int = 1000,
        classifier_activation="softmax",
        name: str | None = None,
        *,
        dropout_rate: float | None = None,
        stochastic_depth_rate: float | None = None,
        key_dim: int = 16,
        num_heads: int = 4,
        intra_depth: int = 1,
        scope_size: int | None = 23,
        implementation: str = "auto",
        se_in_lambda_stages: bool = False,
        width_multiplier: float = 1.0,
    ) -> keras.Model:
        app = _common.ApplicationArgs(include_top, weights, input_tensor, input_shape, pooling,
                                      classes, classifier_activation, name)  # fmt: skip
        lambda_config = LambdaConfig(key_dim, num_heads, intra_depth, scope_size, implementation)
        return _build(
            depth,
            "c4" if c4 else "lambda",
            app,
            se=True,
            se_in_lambda_stages=se_in_lambda_stages,
            dropout_rate=dropout_rate,
            stochastic_depth_rate=stochastic_depth_rate,
            lambda_config=lambda_config,
            width_multiplier=width_multiplier,
        )

    suffix = "C4" if c4 else ""
    title = f"LambdaResNet-{depth}" + ("-C4" if c4 else "")
    return _finish(
        builder, f"LambdaResNet{depth}{suffix}", title, "Bello, ICLR 2021", depth, _LAMBDA_ARGS
    )


def _make_resnet_rs_builder(depth: int):
    def builder(
        include_top: bool = True,
        weights: str | None = None,
        input_tensor=None,
        input_shape: tuple | None = None,
        pooling: str | None = None,
        classes: int = 1000,
        classifier_activation="softmax",
        name: str | None = None,
        *,
        se: bool = True,
        dropout_rate: float | None = None,
        stochastic_depth_rate: float | None = None,
        width_multiplier: float = 1.0,
    ) -> keras.Model:
        if not isinstance(se, bool):
            raise ValueError(f"`se` must be True or False; received se={se!r}.")
        name = name or (None if se else f"resnet_rs{depth}_nose")
        app = _common.ApplicationArgs(include_top, weights, input_tensor, input_shape, pooling,
                                      classes, classifier_activation, name)  # fmt: skip
        return _build(
            depth,
            "resnet_rs",
            app,
            se=se,
            se_in_lambda_stages=False,
            dropout_rate=dropout_rate,
            stochastic_depth_rate=stochastic_depth_rate,
            lambda_config=LambdaConfig(),
            width_multiplier=width_multiplier,
        )

    return _finish(
        builder, f"ResNetRS{depth}", f"ResNet-RS-{depth}", "Bello et al., 2021", depth, _SE_ARGS
    )


for _depth in BLOCKS:
    for _fn in (
        _make_lambda_builder(_depth, c4=False),
        _make_lambda_builder(_depth, c4=True),
        _make_resnet_rs_builder(_depth),
    ):
        globals()[_fn.__name__] = _fn
        __all__.append(_fn.__name__)
del _depth, _fn
