"""torchvision's Mask R-CNN, converted exactly: its ResNet-50 (``resnet``), its rules as
[`MaskRCNN`][lambda_keras.detection.MaskRCNN] settings and its COCO weights (``mask_rcnn``), its
checkpoints' tensor mapping (``checkpoint``) and COCO's categories (``categories``). The command
line that converts a checkpoint is ``python -m lambda_keras.detection.convert_torchvision``."""

from lambda_keras.detection.torchvision.mask_rcnn import (
    COCO_V2_WEIGHTS,
    COCO_WEIGHTS,
    TORCHVISION_RULES,
    TORCHVISION_V2_RULES,
    maskrcnn_resnet50_fpn,
    maskrcnn_resnet50_fpn_v2,
)

__all__ = [
    "COCO_V2_WEIGHTS",
    "COCO_WEIGHTS",
    "TORCHVISION_RULES",
    "TORCHVISION_V2_RULES",
    "maskrcnn_resnet50_fpn",
    "maskrcnn_resnet50_fpn_v2",
]
