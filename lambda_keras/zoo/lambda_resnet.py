"""LambdaResNets (paper App. F.2, Table 19): ResNet-RS with lambda layers in c4 and c5.

The 3x3 convs of the Table 19 blocks of c4 and of every c5 block are lambda layers (|k|=16,
|h|=4, |u|=1, scope 23x23) followed by a 3x3 average pool of stride 2 where the block
downsamples; the ``-C4`` variants use lambda layers in all of c4 and c5. The architecture table
(blocks, Table 19 placements, Table 20 regularisation) is ``lambda_keras.zoo.resnet_rs.DEPTHS``.

Squeeze-and-excitation in LambdaResNets: the paper removes SE from the blocks that hold a
lambda layer. Its parameter counts (Table 13: LambdaResNet-101 36.9M, -101-C4 26.0M, -152 51.4M,
-152-C4 35.1M) are matched only when the convolutional blocks of c4 carry no SE either, i.e. SE is
used in the stages without lambda layers (c2, c3) — the default here (``se_in_lambda_stages``).
"""

from __future__ import annotations

from collections.abc import Callable

import keras

from lambda_keras import _validation as v
from lambda_keras.zoo import applications
from lambda_keras.zoo.resnet_blocks import LambdaConfig
from lambda_keras.zoo.resnet_family import SPECS, build_family_model, family_model

__all__ = [
    "LambdaResNet50",
    "LambdaResNet50C4",
    "LambdaResNet101",
    "LambdaResNet101C4",
    "LambdaResNet152",
    "LambdaResNet152C4",
    "LambdaResNet200",
    "LambdaResNet200C4",
    "LambdaResNet270",
    "LambdaResNet270C4",
    "LambdaResNet350",
    "LambdaResNet350C4",
    "LambdaResNet420",
    "LambdaResNet420C4",
    "decode_predictions",
    "preprocess_input",
]

preprocess_input = applications.preprocess_input
decode_predictions = applications.decode_predictions

_LAMBDA_DOC = """
        key_dim, num_heads, intra_depth, scope_size, implementation: The lambda layers'
            hyper-parameters (paper defaults 16, 4, 1, 23, ``"auto"``).
        se_in_lambda_stages: Also use squeeze-and-excitation in the convolutional blocks of
            the stages that hold lambda layers (default False; see the module docstring)."""


def _lambda_resnet(
    model_name: str,
    *,
    dropout_rate: float | None,
    stochastic_depth_rate: float | None,
    key_dim: int,
    num_heads: int,
    intra_depth: int,
    scope_size: int | None,
    implementation: str,
    se_in_lambda_stages: bool,
    width_multiplier: float,
    **application_args,
) -> keras.Model:
    """What every ``LambdaResNet*`` builder does, with its own arguments."""
    spec = SPECS[model_name]
    lambda_config = LambdaConfig(key_dim, num_heads, intra_depth, scope_size, implementation)
    return build_family_model(
        spec,
        applications.ApplicationArgs(**application_args),
        se_stages=spec.se_stages(True, v.boolean("se_in_lambda_stages", se_in_lambda_stages)),
        dropout_rate=dropout_rate,
        stochastic_depth_rate=stochastic_depth_rate,
        lambda_config=lambda_config,
        width_multiplier=width_multiplier,
    )


# The builders. Each passes its arguments on unchanged (``**locals()``: exactly its parameters,
# checked against ``_lambda_resnet``'s keyword-only signature).


@family_model("lambda_resnet50", _LAMBDA_DOC)
def LambdaResNet50(
    include_top: bool = True,
    weights: str | None = None,
    input_tensor: keras.KerasTensor | None = None,
    input_shape: tuple[int | None, int | None, int] | None = None,
    pooling: str | None = None,
    classes: int = 1000,
    classifier_activation: str | Callable | None = "softmax",
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
    """Instantiates the LambdaResNet-50 architecture (Bello, ICLR 2021).

    Lambda layers at the Table 19 blocks of c4 and in every c5 block.

    Examples:
        >>> from lambda_keras import zoo
        >>> # the paper's model: no published weights
        >>> model = zoo.LambdaResNet50(weights=None)
        >>> model.output_shape, model.count_params()
        ((None, 1000), 19018056)
    """
    return _lambda_resnet("lambda_resnet50", **locals())


@family_model("lambda_resnet50_c4", _LAMBDA_DOC)
def LambdaResNet50C4(
    include_top: bool = True,
    weights: str | None = None,
    input_tensor: keras.KerasTensor | None = None,
    input_shape: tuple[int | None, int | None, int] | None = None,
    pooling: str | None = None,
    classes: int = 1000,
    classifier_activation: str | Callable | None = "softmax",
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
    """Instantiates the LambdaResNet-50-C4 architecture (Bello, ICLR 2021).

    Lambda layers in every block of c4 and c5.
    """
    return _lambda_resnet("lambda_resnet50_c4", **locals())


@family_model("lambda_resnet101", _LAMBDA_DOC)
def LambdaResNet101(
    include_top: bool = True,
    weights: str | None = None,
    input_tensor: keras.KerasTensor | None = None,
    input_shape: tuple[int | None, int | None, int] | None = None,
    pooling: str | None = None,
    classes: int = 1000,
    classifier_activation: str | Callable | None = "softmax",
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
    """Instantiates the LambdaResNet-101 architecture (Bello, ICLR 2021).

    Lambda layers at the Table 19 blocks of c4 and in every c5 block.
    """
    return _lambda_resnet("lambda_resnet101", **locals())


@family_model("lambda_resnet101_c4", _LAMBDA_DOC)
def LambdaResNet101C4(
    include_top: bool = True,
    weights: str | None = None,
    input_tensor: keras.KerasTensor | None = None,
    input_shape: tuple[int | None, int | None, int] | None = None,
    pooling: str | None = None,
    classes: int = 1000,
    classifier_activation: str | Callable | None = "softmax",
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
    """Instantiates the LambdaResNet-101-C4 architecture (Bello, ICLR 2021).

    Lambda layers in every block of c4 and c5.
    """
    return _lambda_resnet("lambda_resnet101_c4", **locals())


@family_model("lambda_resnet152", _LAMBDA_DOC)
def LambdaResNet152(
    include_top: bool = True,
    weights: str | None = None,
    input_tensor: keras.KerasTensor | None = None,
    input_shape: tuple[int | None, int | None, int] | None = None,
    pooling: str | None = None,
    classes: int = 1000,
    classifier_activation: str | Callable | None = "softmax",
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
    """Instantiates the LambdaResNet-152 architecture (Bello, ICLR 2021).

    Lambda layers at the Table 19 blocks of c4 and in every c5 block.
    """
    return _lambda_resnet("lambda_resnet152", **locals())


@family_model("lambda_resnet152_c4", _LAMBDA_DOC)
def LambdaResNet152C4(
    include_top: bool = True,
    weights: str | None = None,
    input_tensor: keras.KerasTensor | None = None,
    input_shape: tuple[int | None, int | None, int] | None = None,
    pooling: str | None = None,
    classes: int = 1000,
    classifier_activation: str | Callable | None = "softmax",
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
    """Instantiates the LambdaResNet-152-C4 architecture (Bello, ICLR 2021).

    Lambda layers in every block of c4 and c5.
    """
    return _lambda_resnet("lambda_resnet152_c4", **locals())


@family_model("lambda_resnet200", _LAMBDA_DOC)
def LambdaResNet200(
    include_top: bool = True,
    weights: str | None = None,
    input_tensor: keras.KerasTensor | None = None,
    input_shape: tuple[int | None, int | None, int] | None = None,
    pooling: str | None = None,
    classes: int = 1000,
    classifier_activation: str | Callable | None = "softmax",
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
    """Instantiates the LambdaResNet-200 architecture (Bello, ICLR 2021).

    Lambda layers at the Table 19 blocks of c4 and in every c5 block.
    """
    return _lambda_resnet("lambda_resnet200", **locals())


@family_model("lambda_resnet200_c4", _LAMBDA_DOC)
def LambdaResNet200C4(
    include_top: bool = True,
    weights: str | None = None,
    input_tensor: keras.KerasTensor | None = None,
    input_shape: tuple[int | None, int | None, int] | None = None,
    pooling: str | None = None,
    classes: int = 1000,
    classifier_activation: str | Callable | None = "softmax",
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
    """Instantiates the LambdaResNet-200-C4 architecture (Bello, ICLR 2021).

    Lambda layers in every block of c4 and c5.
    """
    return _lambda_resnet("lambda_resnet200_c4", **locals())


@family_model("lambda_resnet270", _LAMBDA_DOC)
def LambdaResNet270(
    include_top: bool = True,
    weights: str | None = None,
    input_tensor: keras.KerasTensor | None = None,
    input_shape: tuple[int | None, int | None, int] | None = None,
    pooling: str | None = None,
    classes: int = 1000,
    classifier_activation: str | Callable | None = "softmax",
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
    """Instantiates the LambdaResNet-270 architecture (Bello, ICLR 2021).

    Lambda layers at the Table 19 blocks of c4 and in every c5 block.
    """
    return _lambda_resnet("lambda_resnet270", **locals())


@family_model("lambda_resnet270_c4", _LAMBDA_DOC)
def LambdaResNet270C4(
    include_top: bool = True,
    weights: str | None = None,
    input_tensor: keras.KerasTensor | None = None,
    input_shape: tuple[int | None, int | None, int] | None = None,
    pooling: str | None = None,
    classes: int = 1000,
    classifier_activation: str | Callable | None = "softmax",
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
    """Instantiates the LambdaResNet-270-C4 architecture (Bello, ICLR 2021).

    Lambda layers in every block of c4 and c5.
    """
    return _lambda_resnet("lambda_resnet270_c4", **locals())


@family_model("lambda_resnet350", _LAMBDA_DOC)
def LambdaResNet350(
    include_top: bool = True,
    weights: str | None = None,
    input_tensor: keras.KerasTensor | None = None,
    input_shape: tuple[int | None, int | None, int] | None = None,
    pooling: str | None = None,
    classes: int = 1000,
    classifier_activation: str | Callable | None = "softmax",
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
    """Instantiates the LambdaResNet-350 architecture (Bello, ICLR 2021).

    Lambda layers at the Table 19 blocks of c4 and in every c5 block.
    """
    return _lambda_resnet("lambda_resnet350", **locals())


@family_model("lambda_resnet350_c4", _LAMBDA_DOC)
def LambdaResNet350C4(
    include_top: bool = True,
    weights: str | None = None,
    input_tensor: keras.KerasTensor | None = None,
    input_shape: tuple[int | None, int | None, int] | None = None,
    pooling: str | None = None,
    classes: int = 1000,
    classifier_activation: str | Callable | None = "softmax",
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
    """Instantiates the LambdaResNet-350-C4 architecture (Bello, ICLR 2021).

    Lambda layers in every block of c4 and c5.
    """
    return _lambda_resnet("lambda_resnet350_c4", **locals())


@family_model("lambda_resnet420", _LAMBDA_DOC)
def LambdaResNet420(
    include_top: bool = True,
    weights: str | None = None,
    input_tensor: keras.KerasTensor | None = None,
    input_shape: tuple[int | None, int | None, int] | None = None,
    pooling: str | None = None,
    classes: int = 1000,
    classifier_activation: str | Callable | None = "softmax",
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
    """Instantiates the LambdaResNet-420 architecture (Bello, ICLR 2021).

    Lambda layers at the Table 19 blocks of c4 and in every c5 block.
    """
    return _lambda_resnet("lambda_resnet420", **locals())


@family_model("lambda_resnet420_c4", _LAMBDA_DOC)
def LambdaResNet420C4(
    include_top: bool = True,
    weights: str | None = None,
    input_tensor: keras.KerasTensor | None = None,
    input_shape: tuple[int | None, int | None, int] | None = None,
    pooling: str | None = None,
    classes: int = 1000,
    classifier_activation: str | Callable | None = "softmax",
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
    """Instantiates the LambdaResNet-420-C4 architecture (Bello, ICLR 2021).

    Lambda layers in every block of c4 and c5.
    """
    return _lambda_resnet("lambda_resnet420_c4", **locals())
