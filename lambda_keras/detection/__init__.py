"""Mask R-CNN with LambdaResNet backbones (paper Table 14).

* :class:`MaskRCNN`: FPN, RPN, box and mask heads on a pyramid backbone
  (:class:`lambda_keras.zoo.LambdaResNetBackbone`, :class:`lambda_keras.zoo.ResNetRSBackbone`).
* :mod:`lambda_keras.detection.ops`: boxes, anchors, ROIAlign, NMS, mask pasting.
* :mod:`lambda_keras.detection.targets`: training targets with static shapes.
"""

# ruff: noqa: E402  (the backend is checked before the TensorFlow modules are imported)
from lambda_keras._tensorflow_only import check_backend

check_backend("lambda_keras.detection")

from lambda_keras.detection import ops, targets
from lambda_keras.detection.fpn import FeaturePyramid
from lambda_keras.detection.heads import BoxHead, MaskHead, RPNHead
from lambda_keras.detection.mask_rcnn import MaskRCNN
from lambda_keras.detection.schedules import WarmupStepDecay

__all__ = [
    "BoxHead",
    "FeaturePyramid",
    "MaskHead",
    "MaskRCNN",
    "RPNHead",
    "WarmupStepDecay",
    "ops",
    "targets",
]
