"""Detection with LambdaResNet backbones (paper Table 14).

* :mod:`lambda_keras.detection.ops`: boxes, ROIAlign, NMS, mask pasting.
* Pyramid backbones: :class:`lambda_keras.zoo.LambdaResNetBackbone`,
  :class:`lambda_keras.zoo.ResNetRSBackbone`.
"""

from lambda_keras.detection import ops

__all__ = ["ops"]
