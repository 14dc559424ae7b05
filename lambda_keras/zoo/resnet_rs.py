"""The ResNet-RS family (Bello et al., 2021): its spec table, its body, and the ResNet-RS builders.

ResNet-RS: ResNet-D stem with the max-pool replaced by a strided 3x3 conv, ResNet-D projection
shortcuts, squeeze-and-excitation (ratio 0.25), zero-initialised last batch-norm gamma of each
block, stochastic depth and dropout. The LambdaResNets (:mod:`lambda_keras.zoo.lambda_resnet`)
are the same networks with lambda layers in some blocks; both read the one table below.

:data:`DEPTHS` holds, for each depth, the block allocation (He et al., 2016; Bello et al.,
2021), the c4 blocks that hold a lambda layer (paper Table 19) and the 350-epoch regularisation
(paper Table 20). :data:`SPECS` derives one frozen :class:`ResNetRSSpec` per registered model.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import keras

from lambda_keras import _validation as v
from lambda_keras.zoo import _common
from lambda_keras.zoo import weights as weights_lib
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
    "ResNetRS50",
    "ResNetRS101",
    "ResNetRS152",
    "ResNetRS200",
    "ResNetRS270",
    "ResNetRS350",
    "ResNetRS420",
    "ResNetRSDepth",
    "ResNetRSSpec",
    "TIMM_WEIGHTS",
    "TimmResNetRSWeights",
    "decode_predictions",
    "preprocess_input",
]

WIDTHS = (64, 128, 256, 512)
DEFAULT_SIZE = 224
MIN_SIZE = 32

preprocess_input = _common.preprocess_input
decode_predictions = _common.decode_predictions


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


@dataclasses.dataclass(frozen=True)
class ResNetRSSpec:
    """A registered model of the family: a depth and the blocks that hold lambda layers.

    Attributes:
        name: Registry name (``"lambda_resnet101_c4"``).
        title: Name in the paper (``"LambdaResNet-101-C4"``).
        depth: Its :class:`ResNetRSDepth`.
        lambda_blocks: Per stage c2..c5, the 1-indexed blocks whose 3x3 conv is a lambda layer.
    """

    name: str
    title: str
    depth: ResNetRSDepth
    lambda_blocks: tuple[tuple[int, ...], ...]

    def se_stages(self, se: bool, se_in_lambda_stages: bool) -> tuple[bool, ...]:
        """Per stage, whether its convolutional blocks use squeeze-and-excitation.

        The paper's Table 13 counts are matched with SE only in the stages without lambda layers
        (see :mod:`lambda_keras.zoo.lambda_resnet`); a block with a lambda layer never has SE.
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


@dataclasses.dataclass(frozen=True)
class TimmResNetRSWeights:
    """timm's ``resnetrs<depth>.tf_in1k``: the ResNet-RS authors' TensorFlow ImageNet
    checkpoints converted by timm (SE on), and how timm evaluates them.

    Attributes:
        depth: The ResNet-RS depth.
        train_size: Image side the authors trained at.
        test_size: Image side timm evaluates at (the registered ``input_size``).
        crop_fraction: timm's evaluation ``crop_pct``.
        timm_top1: ImageNet top-1 (%) timm measured at ``test_size`` and ``crop_fraction``
            (``results/results-imagenet.csv`` of huggingface/pytorch-image-models, commit
            0173a13).
        authors_top1: ImageNet top-1 (%) the ResNet-RS authors report for this checkpoint at
            ``train_size`` (their README), or None where they list no such entry.
    """

    depth: int
    train_size: int
    test_size: int
    crop_fraction: float
    timm_top1: float
    authors_top1: float | None

    @property
    def name(self) -> str:
        return f"resnetrs{self.depth}.tf_in1k"

    @property
    def url(self) -> str:
        return f"https://huggingface.co/timm/{self.name}/resolve/main/model.safetensors"


TIMM_WEIGHTS: dict[int, TimmResNetRSWeights] = {
    w.depth: w
    for w in (
        TimmResNetRSWeights(50, 160, 224, 0.91, 79.896, 78.8),
        TimmResNetRSWeights(101, 192, 288, 0.94, 82.284, 81.2),
        TimmResNetRSWeights(152, 256, 320, 1.0, 83.702, 83.0),
        TimmResNetRSWeights(200, 256, 320, 1.0, 84.444, 83.4),
        TimmResNetRSWeights(270, 256, 352, 1.0, 84.428, 83.8),
        TimmResNetRSWeights(350, 288, 384, 1.0, 84.714, None),  # the authors list 256 and 320 only
        TimmResNetRSWeights(420, 320, 416, 1.0, 85.006, 84.4),
    )
}

for _weights in TIMM_WEIGHTS.values():
    # The SHA-256 of the Hub files is not pinned yet: listed, never downloaded unchecked.
    weights_lib.register_weights(
        weights_lib.WeightsSpec(
            name=_weights.name,
            url=_weights.url,
            sha256=None,
            architecture=f"resnet_rs{_weights.depth}",
            input_size=_weights.test_size,
            crop_fraction=_weights.crop_fraction,
            source_format="timm",
            aliases=("imagenet",),
        )
    )


_FAMILY_DOC = (
    _common.APPLICATION_ARGS_DOC
    + """
        dropout_rate: Dropout before the classifier; default from paper Table 20 ({dropout}).
        stochastic_depth_rate: Stochastic depth rate of the last stage; default from Table 20
            ({drop_path}). Stage ``s`` (0-based, c2..c5) uses ``rate * (s + 2) / 5``.
        width_multiplier: Scales every stage's channels (rounded to multiples of 8), e.g.
            0.25 for quick experiments on small data; 1.0 is the paper's model.{extra}"""
    + _common.RETURNS_DOC
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
    app: _common.ApplicationArgs,
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
    return _common.build(
        app,
        architecture=spec.name,
        body=body,
        dropout_rate=default.dropout_rate if dropout_rate is None else dropout_rate,
        default_size=DEFAULT_SIZE,
        min_size=MIN_SIZE,
    )


_SE_DOC = """
        se: Whether the blocks use squeeze-and-excitation (ratio 0.25)."""


def _resnet_rs(
    model_name: str,
    *,
    se: bool,
    dropout_rate: float | None,
    stochastic_depth_rate: float | None,
    width_multiplier: float,
    **application_args,
) -> keras.Model:
    """What every ``ResNetRS*`` builder does, with its own arguments."""
    v.boolean("se", se)
    spec = SPECS[model_name]
    app = _common.ApplicationArgs(**application_args)
    if not se and app.weights is not None:
        resolved = weights_lib.resolve_weights(app.weights, model_name)
        if isinstance(resolved, weights_lib.WeightsSpec) and resolved.source_format == "timm":
            raise ValueError(
                f"timm's ResNet-RS weights ({resolved.name}) have squeeze-and-excitation: "
                f"pass se=True with weights={app.weights!r}; received se=False."
            )
    if app.name is None and not se:
        app = dataclasses.replace(app, name=f"{model_name}_nose")
    return build_family_model(
        spec,
        app,
        se_stages=spec.se_stages(se, se_in_lambda_stages=False),
        dropout_rate=dropout_rate,
        stochastic_depth_rate=stochastic_depth_rate,
        lambda_config=LambdaConfig(),
        width_multiplier=width_multiplier,
    )


# The builders. Each passes its arguments on unchanged (``**locals()``: exactly its parameters,
# checked against ``_resnet_rs``'s keyword-only signature).


@family_model("resnet_rs50", _SE_DOC)
def ResNetRS50(
    include_top: bool = True,
    weights: str | None = None,
    input_tensor: keras.KerasTensor | None = None,
    input_shape: tuple[int | None, int | None, int] | None = None,
    pooling: str | None = None,
    classes: int = 1000,
    classifier_activation: str | Callable | None = "softmax",
    name: str | None = None,
    *,
    se: bool = True,
    dropout_rate: float | None = None,
    stochastic_depth_rate: float | None = None,
    width_multiplier: float = 1.0,
) -> keras.Model:
    """Instantiates the ResNet-RS-50 architecture (Bello et al., 2021)."""
    return _resnet_rs("resnet_rs50", **locals())


@family_model("resnet_rs101", _SE_DOC)
def ResNetRS101(
    include_top: bool = True,
    weights: str | None = None,
    input_tensor: keras.KerasTensor | None = None,
    input_shape: tuple[int | None, int | None, int] | None = None,
    pooling: str | None = None,
    classes: int = 1000,
    classifier_activation: str | Callable | None = "softmax",
    name: str | None = None,
    *,
    se: bool = True,
    dropout_rate: float | None = None,
    stochastic_depth_rate: float | None = None,
    width_multiplier: float = 1.0,
) -> keras.Model:
    """Instantiates the ResNet-RS-101 architecture (Bello et al., 2021)."""
    return _resnet_rs("resnet_rs101", **locals())


@family_model("resnet_rs152", _SE_DOC)
def ResNetRS152(
    include_top: bool = True,
    weights: str | None = None,
    input_tensor: keras.KerasTensor | None = None,
    input_shape: tuple[int | None, int | None, int] | None = None,
    pooling: str | None = None,
    classes: int = 1000,
    classifier_activation: str | Callable | None = "softmax",
    name: str | None = None,
    *,
    se: bool = True,
    dropout_rate: float | None = None,
    stochastic_depth_rate: float | None = None,
    width_multiplier: float = 1.0,
) -> keras.Model:
    """Instantiates the ResNet-RS-152 architecture (Bello et al., 2021)."""
    return _resnet_rs("resnet_rs152", **locals())


@family_model("resnet_rs200", _SE_DOC)
def ResNetRS200(
    include_top: bool = True,
    weights: str | None = None,
    input_tensor: keras.KerasTensor | None = None,
    input_shape: tuple[int | None, int | None, int] | None = None,
    pooling: str | None = None,
    classes: int = 1000,
    classifier_activation: str | Callable | None = "softmax",
    name: str | None = None,
    *,
    se: bool = True,
    dropout_rate: float | None = None,
    stochastic_depth_rate: float | None = None,
    width_multiplier: float = 1.0,
) -> keras.Model:
    """Instantiates the ResNet-RS-200 architecture (Bello et al., 2021)."""
    return _resnet_rs("resnet_rs200", **locals())


@family_model("resnet_rs270", _SE_DOC)
def ResNetRS270(
    include_top: bool = True,
    weights: str | None = None,
    input_tensor: keras.KerasTensor | None = None,
    input_shape: tuple[int | None, int | None, int] | None = None,
    pooling: str | None = None,
    classes: int = 1000,
    classifier_activation: str | Callable | None = "softmax",
    name: str | None = None,
    *,
    se: bool = True,
    dropout_rate: float | None = None,
    stochastic_depth_rate: float | None = None,
    width_multiplier: float = 1.0,
) -> keras.Model:
    """Instantiates the ResNet-RS-270 architecture (Bello et al., 2021)."""
    return _resnet_rs("resnet_rs270", **locals())


@family_model("resnet_rs350", _SE_DOC)
def ResNetRS350(
    include_top: bool = True,
    weights: str | None = None,
    input_tensor: keras.KerasTensor | None = None,
    input_shape: tuple[int | None, int | None, int] | None = None,
    pooling: str | None = None,
    classes: int = 1000,
    classifier_activation: str | Callable | None = "softmax",
    name: str | None = None,
    *,
    se: bool = True,
    dropout_rate: float | None = None,
    stochastic_depth_rate: float | None = None,
    width_multiplier: float = 1.0,
) -> keras.Model:
    """Instantiates the ResNet-RS-350 architecture (Bello et al., 2021)."""
    return _resnet_rs("resnet_rs350", **locals())


@family_model("resnet_rs420", _SE_DOC)
def ResNetRS420(
    include_top: bool = True,
    weights: str | None = None,
    input_tensor: keras.KerasTensor | None = None,
    input_shape: tuple[int | None, int | None, int] | None = None,
    pooling: str | None = None,
    classes: int = 1000,
    classifier_activation: str | Callable | None = "softmax",
    name: str | None = None,
    *,
    se: bool = True,
    dropout_rate: float | None = None,
    stochastic_depth_rate: float | None = None,
    width_multiplier: float = 1.0,
) -> keras.Model:
    """Instantiates the ResNet-RS-420 architecture (Bello et al., 2021)."""
    return _resnet_rs("resnet_rs420", **locals())
