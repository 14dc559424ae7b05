"""The model zoo: builders with the ``keras.applications`` signature, a registry, FLOPs.

* LambdaResNets and their -C4 variants (paper Table 19), ResNet-RS baselines:
  ``LambdaResNet50`` ... ``LambdaResNet420``, ``LambdaResNet50C4`` ..., ``ResNetRS50(se=...)`` ...
* ``ResNet50(layout="CCLL")``: the vanilla ResNet-50 placement study (Tables 3, 8, 12).
* ``MobileNetV2`` and ``LambdaMobileNetV2`` (App. E.4.2, Table 17).
"""

from lambda_keras.zoo import hybrid_resnet50, lambda_resnet, mobilenet_v2, weights
from lambda_keras.zoo.flops import count_flops
from lambda_keras.zoo.hybrid_resnet50 import ResNet50
from lambda_keras.zoo.lambda_resnet import *  # noqa: F403  (the 21 ResNet-RS family builders)
from lambda_keras.zoo.mobilenet_v2 import LambdaMobileNetV2, MobileNetV2
from lambda_keras.zoo.registry import get_model, list_models, model_builder
from lambda_keras.zoo.weights import WeightsSpec, register_weights, registered_weights

__all__ = [
    "LambdaMobileNetV2",
    "MobileNetV2",
    "ResNet50",
    "WeightsSpec",
    "count_flops",
    "get_model",
    "hybrid_resnet50",
    "lambda_resnet",
    "list_models",
    "mobilenet_v2",
    "model_builder",
    "register_weights",
    "registered_weights",
    "weights",
    *[name for name in lambda_resnet.__all__ if name[0].isupper()],
]
