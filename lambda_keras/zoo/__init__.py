"""The model zoo: builders with the ``keras.applications`` signature, a registry, FLOPs.

* LambdaResNets and their -C4 variants (paper Table 19): ``LambdaResNet50`` ...
  ``LambdaResNet420C4`` in [`lambda_resnet`][lambda_keras.zoo.lambda_resnet]; their ResNet-RS
  baselines ``ResNetRS50`` ... ``ResNetRS420`` in [`resnet_rs`][lambda_keras.zoo.resnet_rs]; the
  family's spec table and body in [`resnet_family`][lambda_keras.zoo.resnet_family].
* ``ResNet50(layout="CCLL")``: the vanilla ResNet-50 placement study (Tables 3, 8, 12).
* ``MobileNetV2`` and ``LambdaMobileNetV2`` (App. E.4.2, Table 17).
* ``LambdaResNet26T``, ``LambdaResNet26RPT256``, ``LambdaResNet50TS``: Keras ports of timm's
  ImageNet LambdaResNets, with ``weights="imagenet"``
  ([`timm_lambda_resnet`][lambda_keras.zoo.timm_lambda_resnet]; timm's checkpoints map through
  [`timm_checkpoint`][lambda_keras.zoo.timm_checkpoint], the command line is ``convert_timm``).

* ``LambdaResNetBackbone``, ``TimmLambdaResNetBackbone`` and ``ResNetRSBackbone``: feature-pyramid
  backbones (P2-P5) for detection
  ([`pyramid_backbone`][lambda_keras.zoo.pyramid_backbone]).

Every builder returns a ``ZooModel``: a functional ``keras.Model`` whose steps compile as one
graph each on PyTorch ([`applications`][lambda_keras.zoo.applications]).

Every builder is registered by name (``list_models()``, ``get_model(name)``,
``model_info(name)``).
"""

from lambda_keras.zoo import (
    hybrid_resnet50,
    lambda_resnet,
    mobilenet_v2,
    pyramid_backbone,
    resnet_family,
    resnet_rs,
    timm_checkpoint,
    timm_lambda_resnet,
    weights,
)
from lambda_keras.zoo.applications import ZooModel
from lambda_keras.zoo.flops import count_flops
from lambda_keras.zoo.hybrid_resnet50 import ResNet50
from lambda_keras.zoo.lambda_resnet import (
    LambdaResNet50,
    LambdaResNet50C4,
    LambdaResNet101,
    LambdaResNet101C4,
    LambdaResNet152,
    LambdaResNet152C4,
    LambdaResNet200,
    LambdaResNet200C4,
    LambdaResNet270,
    LambdaResNet270C4,
    LambdaResNet350,
    LambdaResNet350C4,
    LambdaResNet420,
    LambdaResNet420C4,
)
from lambda_keras.zoo.mobilenet_v2 import LambdaMobileNetV2, MobileNetV2
from lambda_keras.zoo.pyramid_backbone import (
    LambdaResNetBackbone,
    ResNetRSBackbone,
    TimmLambdaResNetBackbone,
)
from lambda_keras.zoo.registry import (
    ModelInfo,
    get_model,
    list_models,
    model_builder,
    model_info,
    register_model,
)
from lambda_keras.zoo.resnet_rs import (
    ResNetRS50,
    ResNetRS101,
    ResNetRS152,
    ResNetRS200,
    ResNetRS270,
    ResNetRS350,
    ResNetRS420,
)
from lambda_keras.zoo.timm_lambda_resnet import (
    LambdaResNet26RPT256,
    LambdaResNet26T,
    LambdaResNet50TS,
)
from lambda_keras.zoo.weights import WeightsSpec, register_weights, registered_weights

__all__ = [
    "get_model",
    "list_models",
    "model_info",
    "LambdaResNet50TS",
    "LambdaResNet26T",
    "LambdaResNet26RPT256",
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
    "ResNetRS50",
    "ResNetRS101",
    "ResNetRS152",
    "ResNetRS200",
    "ResNetRS270",
    "ResNetRS350",
    "ResNetRS420",
    "LambdaMobileNetV2",
    "MobileNetV2",
    "ResNet50",
    "LambdaResNetBackbone",
    "ResNetRSBackbone",
    "TimmLambdaResNetBackbone",
    "ModelInfo",
    "WeightsSpec",
    "count_flops",
    "hybrid_resnet50",
    "lambda_resnet",
    "mobilenet_v2",
    "pyramid_backbone",
    "model_builder",
    "register_model",
    "register_weights",
    "ZooModel",
    "registered_weights",
    "resnet_family",
    "resnet_rs",
    "timm_checkpoint",
    "timm_lambda_resnet",
    "weights",
]
