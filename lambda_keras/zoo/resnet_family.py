"""The ResNet family the paper builds on (Bello et al., 2021, "Revisiting ResNets"): its spec table,
its body and the shared builder. ResNet-RS
([`lambda_keras.zoo.resnet_rs`][lambda_keras.zoo.resnet_rs]) and the LambdaResNets
([`lambda_keras.zoo.lambda_resnet`][lambda_keras.zoo.lambda_resnet]) are the same networks, the
latter with lambda layers in some blocks; both read the one table below.

ResNet-D stem with the max-pool replaced by a strided 3x3 conv, ResNet-D projection shortcuts,
squeeze-and-excitation (ratio 0.25), zero-initialised last batch-norm gamma of each block,
stochastic depth and dropout.

``DEPTHS`` holds, for each depth, the block allocation (He et al., 2016; Bello et al., 2021), the c4
blocks that hold a lambda layer (paper Table 19) and the 350-epoch regularisation (paper Table 20).
``SPECS`` derives one frozen ``ResNetRSSpec`` per registered model.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import keras

from lambda_keras import _validation as v
from lambda_keras.zoo import applications
from lambda_keras.zoo.registry import Table20Row, register_model
from lambda_keras.zoo.resnet_blocks import (
    LambdaConfig,
    NormConfig,
    bottleneck,
    resnet_d_stem,
    scaled,
)

__all__ = [
    "DEPTHS",
    "SPECS",
    "ResNetRSDepth",
    "ResNetRSSpec",
    "build_family_model",
    "family_model",
    "resnet_rs_body",
]

WIDTHS = (64, 128, 256, 512)
DEFAULT_SIZE = 224
MIN_SIZE = 32


@dataclasses.dataclass(frozen=True)
class ResNetRSDepth:
    """One depth of the family.

    Attributes:
        depth: 50, 101, ... 420.
        blocks: Bottlenecks per stage c2..c5.
        c4_lambda_blocks: The 1-indexed c4 blocks whose 3x3 conv a LambdaResNet replaces with
            a lambda layer (Table 19); every c5 block has one too.
        table20: Table 20 rows (image size, RandAugment magnitude, dropout, stochastic depth).
    """

    depth: int
    blocks: tuple[int, int, int, int]
    c4_lambda_blocks: tuple[int, ...]
    table20: tuple[Table20Row, ...]

    @property
    def default_regularization(self) -> Table20Row:
        """The Table 20 row at the largest listed image size: the builders' default dropout
        and stochastic depth."""
        return max(self.table20, key=lambda row: row.image_size)


def _rows(*rows: tuple[int, int, float, float]) -> tuple[Table20Row, ...]:
    return tuple(Table20Row(*row) for row in rows)


_TABLE20_152 = _rows(
    (192, 15, 0.3, 0.0), (224, 15, 0.3, 0.1), (256, 15, 0.3, 0.1), (288, 15, 0.3, 0.1)
)
# Paper Table 19 (blocks, lambda layers in c4) and Table 20 (rows by image size).
DEPTHS: dict[int, ResNetRSDepth] = {
    row.depth: row
    for row in (
        ResNetRSDepth(50, (3, 4, 6, 3), (3,), _rows((128, 10, 0.2, 0.0), (160, 10, 0.2, 0.0))),
        ResNetRSDepth(
            101, (3, 4, 23, 3), (6, 12, 18), _rows((160, 10, 0.3, 0.0), (192, 15, 0.2, 0.0))
        ),
        ResNetRSDepth(152, (3, 8, 36, 3), (5, 10, 15, 20, 25, 30), _TABLE20_152),
        # Depth 200 is not in Table 20: it takes 152's rows.
        ResNetRSDepth(200, (3, 24, 36, 3), (5, 10, 15, 20, 25, 30), _TABLE20_152),
        ResNetRSDepth(270, (4, 29, 53, 4), (8, 16, 24, 32, 40, 48), _rows((256, 15, 0.3, 0.1))),
        ResNetRSDepth(
            350,
            (4, 36, 72, 4),
            (10, 20, 30, 40, 50, 60),
            _rows((256, 15, 0.3, 0.2), (288, 15, 0.3, 0.2), (320, 15, 0.3, 0.2)),
        ),
        ResNetRSDepth(
            420, (4, 44, 87, 4), (10, 20, 30, 40, 50, 60, 70, 80), _rows((320, 15, 0.3, 0.2))
        ),
    )
}
"""Each depth of the ResNet-RS family: blocks per stage, where Table 19 puts lambda layers, and
Table 20's training settings by image size."""


@dataclasses.dataclass(frozen=True)
class ResNetRSSpec:
    """A registered model of the family: a depth and the blocks that hold lambda layers.

    Attributes:
        name: Registry name (``"lambda_resnet101_c4"``).
        title: Name in the paper (``"LambdaResNet-101-C4"``).
        depth: Its [`ResNetRSDepth`][lambda_keras.zoo.resnet_family.ResNetRSDepth].
        lambda_blocks: Per stage c2..c5, the 1-indexed blocks whose 3x3 conv is a lambda layer.
    """

    name: str
    title: str
    depth: ResNetRSDepth
    lambda_blocks: tuple[tuple[int, ...], ...]

    def se_stages(self, se: bool, se_in_lambda_stages: bool) -> tuple[bool, ...]:
        """Per stage, whether its convolutional blocks use squeeze-and-excitation.

        The paper's Table 13 counts are matched with SE only in the stages without lambda layers
        (see [`lambda_keras.zoo.lambda_resnet`][lambda_keras.zoo.lambda_resnet]); a block with a
        lambda layer never has SE.
        """
        return tuple(se and (se_in_lambda_stages or not blocks) for blocks in self.lambda_blocks)


def _specs(row: ResNetRSDepth) -> tuple[ResNetRSSpec, ...]:
    """LambdaResNet (Table 19), LambdaResNet-C4 (lambda layers in all of c4 and c5), ResNet-RS."""
    d, (_, _, c4_blocks, c5_blocks) = row.depth, row.blocks
    all_c4, all_c5 = tuple(range(1, c4_blocks + 1)), tuple(range(1, c5_blocks + 1))
    return (
        ResNetRSSpec(
            f"lambda_resnet{d}", f"LambdaResNet-{d}", row, ((), (), row.c4_lambda_blocks, all_c5)
        ),
        ResNetRSSpec(f"lambda_resnet{d}_c4", f"LambdaResNet-{d}-C4", row, ((), (), all_c4, all_c5)),
        ResNetRSSpec(f"resnet_rs{d}", f"ResNet-RS-{d}", row, ((), (), (), ())),
    )


SPECS: dict[str, ResNetRSSpec] = {
    spec.name: spec for row in DEPTHS.values() for spec in _specs(row)
}
"""Every registered model of the family (ResNet-RS, LambdaResNet and LambdaResNet-C4 at each
depth) by registry name."""


_FAMILY_DOC = (
    applications.APPLICATION_ARGS_DOC
    + """
        dropout_rate: Dropout before the classifier; default from paper Table 20 ({dropout}).
        stochastic_depth_rate: Stochastic depth rate of the last stage; default from Table 20
            ({drop_path}). Stage ``s`` (0-based, c2..c5) uses ``rate * (s + 2) / 5``.
        width_multiplier: Scales every stage's channels (rounded to multiples of 8), e.g.
            0.25 for quick experiments on small data; 1.0 is the paper's model.{extra}"""
    + applications.RETURNS_DOC
)


def family_model(name: str, extra_doc: str = "") -> Callable:
    """``register_model`` for a model of the family: its spec, Table 20 rows and docstring."""
    spec = SPECS[name]
    row = spec.depth.default_regularization
    doc = _FAMILY_DOC.format(
        dropout=row.dropout_rate, drop_path=row.stochastic_depth_rate, extra=extra_doc
    )
    return register_model(name, spec=spec, table20=spec.depth.table20, doc=doc)


def resnet_rs_body(
    spec: ResNetRSSpec,
    se_stages: tuple[bool, ...],
    stochastic_depth_rate: float,
    lambda_config: LambdaConfig,
    norm: NormConfig,
    width_multiplier: float = 1.0,
) -> Callable[[keras.KerasTensor], keras.KerasTensor]:
    """Image ``[b, h, w, 3]`` -> c5 features ``[b, h/32, w/32, 2048 * width]`` (``"features"``).

    Args:
        se_stages: Per stage, whether its convolutional blocks use SE (ratio 0.25).
        stochastic_depth_rate: Drop rate of the last stage; stage ``s`` (0-based) uses
            ``rate * (s + 2) / 5`` (ResNet-RS).
    """

    def body(x):
        x = resnet_d_stem(x, norm, width_multiplier=width_multiplier)
        widths = [scaled(w, width_multiplier) for w in WIDTHS]
        for stage, (blocks, width) in enumerate(zip(spec.depth.blocks, widths, strict=True)):
            for block in range(1, blocks + 1):
                use_lambda = block in spec.lambda_blocks[stage]
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


def build_family_model(
    spec: ResNetRSSpec,
    app: applications.ApplicationArgs,
    *,
    se_stages: tuple[bool, ...],
    dropout_rate: float | None,
    stochastic_depth_rate: float | None,
    lambda_config: LambdaConfig,
    width_multiplier: float = 1.0,
) -> keras.Model:
    """The model ``spec`` describes; ``None`` rates take the depth's Table 20 defaults."""
    v.positive_number("width_multiplier", width_multiplier)
    if stochastic_depth_rate is not None:
        v.number_in("stochastic_depth_rate", stochastic_depth_rate, 0.0, 1.0, high_open=True)
    default = spec.depth.default_regularization
    if stochastic_depth_rate is None:
        stochastic_depth_rate = default.stochastic_depth_rate
    body = resnet_rs_body(
        spec, se_stages, stochastic_depth_rate, lambda_config, NormConfig(), width_multiplier
    )
    return applications.build(
        app,
        architecture=spec.name,
        body=body,
        dropout_rate=default.dropout_rate if dropout_rate is None else dropout_rate,
        default_size=DEFAULT_SIZE,
        min_size=MIN_SIZE,
    )
