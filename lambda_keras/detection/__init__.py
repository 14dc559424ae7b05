"""Mask R-CNN with LambdaResNet backbones (paper Table 14), on every Keras 3 backend.

* [`MaskRCNN`][lambda_keras.detection.MaskRCNN]: FPN, RPN, box and mask heads on a pyramid backbone
  ([`LambdaResNetBackbone`][lambda_keras.zoo.LambdaResNetBackbone],
  [`ResNetRSBackbone`][lambda_keras.zoo.ResNetRSBackbone]); trains with ``fit`` (its losses in
  ``compute_loss``) on JAX, TensorFlow and PyTorch.
* [maskrcnn_resnet50_fpn][lambda_keras.detection.maskrcnn_resnet50_fpn] and
  [maskrcnn_resnet50_fpn_v2][lambda_keras.detection.maskrcnn_resnet50_fpn_v2]: torchvision's COCO
  Mask R-CNNs (``weights="coco"``), converted exactly: ``MaskRCNN`` with torchvision's rules as
  settings ([torchvision][lambda_keras.detection.torchvision],
  [convert_torchvision][lambda_keras.detection.convert_torchvision]).
* [`detect`][lambda_keras.detection.detect.detect]: one photo's detections in its pixels, on any
  backend.
* [transform][lambda_keras.detection.transform]: each model's input transform (resize, pad, map
  back), and [anchor_generator][lambda_keras.detection.anchor_generator]: where its anchors lie;
  both parts passed to the model and saved with it.
* [ops][lambda_keras.detection.ops]: boxes, anchors, ROIAlign, NMS, mask pasting.
* [targets][lambda_keras.detection.targets]: training targets with static shapes;
  [target_checks][lambda_keras.detection.target_checks]: what they may hold.

TensorFlow stays where it is the point: reading COCO and labelme into ``tf.data``
([data][lambda_keras.training.detection.datasets]) and SavedModel / LiteRT export
([serving][lambda_keras.detection.serving]).
"""

from lambda_keras.detection import ops, targets
from lambda_keras.detection.anchor_generator import (
    AnchorGenerator,
    CentredAnchors,
    TorchvisionAnchors,
)
from lambda_keras.detection.detect import detect
from lambda_keras.detection.fpn import FeaturePyramid
from lambda_keras.detection.heads import BoxHead, MaskHead, RPNHead
from lambda_keras.detection.mask_rcnn import MaskRCNN
from lambda_keras.detection.schedules import WarmupStepDecay
from lambda_keras.detection.torchvision.mask_rcnn import (
    maskrcnn_resnet50_fpn,
    maskrcnn_resnet50_fpn_v2,
)
from lambda_keras.detection.transform import (
    InputTransform,
    LetterboxTransform,
    TorchvisionTransform,
)

__all__ = [
    "maskrcnn_resnet50_fpn",
    "maskrcnn_resnet50_fpn_v2",
    "detect",
    "MaskRCNN",
    "AnchorGenerator",
    "BoxHead",
    "CentredAnchors",
    "FeaturePyramid",
    "InputTransform",
    "MaskHead",
    "RPNHead",
    "LetterboxTransform",
    "TorchvisionAnchors",
    "TorchvisionTransform",
    "WarmupStepDecay",
    "ops",
    "targets",
]
