"""ResNet-RS (Bello et al., 2021): the ``ResNetRS50`` ... ``ResNetRS420`` builders and timm's
ImageNet weights for them. The family's spec table and body:
[`resnet_family`][lambda_keras.zoo.resnet_family].
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import keras

from lambda_keras import _validation as v
from lambda_keras.zoo import applications
from lambda_keras.zoo import weights as weights_lib
from lambda_keras.zoo.resnet_blocks import LambdaConfig
from lambda_keras.zoo.resnet_family import (
    DEPTHS,
    SPECS,
    ResNetRSDepth,
    ResNetRSSpec,
    build_family_model,
    family_model,
)
from lambda_keras.zoo.timm_checkpoint import TIMM_HUB

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

preprocess_input = applications.preprocess_input
decode_predictions = applications.decode_predictions


@dataclasses.dataclass(frozen=True)
class TimmResNetRSWeights:
    """timm's ``resnetrs<depth>.tf_in1k``: the ResNet-RS authors' TensorFlow ImageNet
    checkpoints converted by timm (SE on), and how timm evaluates them. Their pins and metrics
    are registered ([registered_weights][lambda_keras.zoo.weights.registered_weights]).

    Attributes:
        depth: The ResNet-RS depth.
        train_size: Image side the authors trained at.
        test_size: Image side timm evaluates at (the registered ``input_size``).
        crop_fraction: timm's evaluation ``crop_pct``.
        authors_top1: ImageNet top-1 (%) the ResNet-RS authors report for this checkpoint at
            ``train_size`` (tensorflow/tpu ``models/official/resnet/resnet_rs`` README), or
            None where they list no such entry.
    """

    depth: int
    train_size: int
    test_size: int
    crop_fraction: float
    authors_top1: float | None

    @property
    def name(self) -> str:
        return f"resnetrs{self.depth}.tf_in1k"

    @property
    def hub_id(self) -> str:
        return f"timm/{self.name}"


TIMM_WEIGHTS: dict[int, TimmResNetRSWeights] = {
    w.depth: w
    for w in (
        TimmResNetRSWeights(50, 160, 224, 0.91, 78.8),
        TimmResNetRSWeights(101, 192, 288, 0.94, 81.2),
        TimmResNetRSWeights(152, 256, 320, 1.0, 83.0),
        TimmResNetRSWeights(200, 256, 320, 1.0, 83.4),
        TimmResNetRSWeights(270, 256, 352, 1.0, 83.8),
        TimmResNetRSWeights(350, 288, 384, 1.0, None),  # the authors list 256 and 320 only
        TimmResNetRSWeights(420, 320, 416, 1.0, 84.4),
    )
}
"""timm's `resnetrs<depth>.tf_in1k` ImageNet weights by depth: the sizes they were trained
and are evaluated at, timm's crop fraction and the top-1 the ResNet-RS authors report."""

# How each file is checked (lambda_keras.zoo.integrity), where its digest or commit was read,
# and timm's top-1 / top-5 (%) (timm_checkpoint.TIMM_RESULTS).
_PINS = {
    50: dict(
        integrity="sha256",
        sha256="cdc0ca71073acb12ea479681a3109ebb0e2548e9684bf8b9a32ec929d881f70c",
        revision="fea64b8",  # "Add model", the commit the file page names
        source=f"{TIMM_HUB}/resnetrs50.tf_in1k/blob/main/model.safetensors",
        imagenet_top=(79.934, 94.972),
    ),
    101: dict(
        integrity="hub_commit",
        revision="7ae91b3e34c1928aac327ea03d71715235061eee",  # "Add model"
        source=f"{TIMM_HUB}/resnetrs101.tf_in1k/tree/7ae91b3e34c1928aac327ea03d71715235061eee",
        imagenet_top=(82.288, 96.000),
    ),
    152: dict(
        integrity="hub_latest",  # no commit of this repository could be cited
        revision="main",
        source=f"{TIMM_HUB}/resnetrs152.tf_in1k",
        imagenet_top=(83.710, 96.614),
    ),
    200: dict(
        integrity="hub_commit",
        revision="8facd50",  # "Add model"
        source=f"{TIMM_HUB}/resnetrs200.tf_in1k/commits/main",
        imagenet_top=(84.448, 97.074),
    ),
    270: dict(
        integrity="hub_commit",
        revision="08bd657",  # "transformers tag": main when read, the file from "Add model"
        source=f"{TIMM_HUB}/resnetrs270.tf_in1k/tree/main",
        imagenet_top=(84.438, 96.972),
    ),
    350: dict(
        integrity="hub_commit",
        revision="433eba9ce11fe73140d475a4a960306725443c10",  # "Add model"
        source=f"{TIMM_HUB}/resnetrs350.tf_in1k/tree/433eba9ce11fe73140d475a4a960306725443c10",
        imagenet_top=(84.710, 96.992),
    ),
    420: dict(
        integrity="hub_commit",
        revision="9f7f4ecddf763ad9300978129a98a1dc2b9b83ac",  # "Fix library_name."
        source=f"{TIMM_HUB}/resnetrs420.tf_in1k/commits/9f7f4ecddf763ad9300978129a98a1dc2b9b83ac/.gitattributes",
        imagenet_top=(85.010, 97.110),
    ),
}

# The ResNet-RS authors' TensorFlow checkpoints (tensorflow/tpu, an Apache-2.0 repository),
# converted by timm: Apache-2.0, and the terms of ImageNet-1k, which they were trained on.
GOOGLE_LICENSE = "Apache-2.0 (Google); ImageNet-1k's terms may apply"
GOOGLE_LICENSE_SOURCE = (
    "https://github.com/tensorflow/tpu/blob/master/models/official/resnet/resnet_rs/README.md"
)
for _weights in TIMM_WEIGHTS.values():
    weights_lib.register_timm_weights(
        architecture=f"resnet_rs{_weights.depth}",
        family="resnet",
        hub_id=_weights.hub_id,
        input_size=_weights.test_size,
        crop_fraction=_weights.crop_fraction,
        license=GOOGLE_LICENSE,
        license_source=GOOGLE_LICENSE_SOURCE,
        **_PINS[_weights.depth],
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
    app = applications.ApplicationArgs(**application_args)
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
