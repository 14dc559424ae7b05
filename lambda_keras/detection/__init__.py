"""Mask R-CNN with LambdaResNet backbones (paper Table 14).

* :class:`MaskRCNN`: FPN, RPN, box and mask heads on a pyramid backbone
  (:class:`lambda_keras.zoo.LambdaResNetBackbone`, :class:`lambda_keras.zoo.ResNetRSBackbone`).
* :func:`maskrcnn_resnet50_fpn`: torchvision's COCO Mask R-CNN (``weights="coco"``), converted
  exactly: a ``MaskRCNN`` with torchvision's rules as settings
  (:mod:`lambda_keras.detection.torchvision`, :mod:`lambda_keras.detection.convert_torchvision`).
* :mod:`lambda_keras.detection.transform`: each model's input transform (resize, pad, map back).
* :mod:`lambda_keras.detection.ops`: boxes, anchors, ROIAlign, NMS, mask pasting.
* :mod:`lambda_keras.detection.targets`: training targets with static shapes.
"""

# ruff: noqa: E402  (the backend is checked before the TensorFlow modules are imported)
import keras

from lambda_keras.detection import ops  # keras.ops: every backend

if keras.backend.backend() == "tensorflow":
    from lambda_keras.detection import targets
    from lambda_keras.detection.fpn import FeaturePyramid
    from lambda_keras.detection.heads import BoxHead, MaskHead, RPNHead
    from lambda_keras.detection.mask_rcnn import MaskRCNN
    from lambda_keras.detection.schedules import WarmupStepDecay
    from lambda_keras.detection.torchvision.mask_rcnn import maskrcnn_resnet50_fpn
    from lambda_keras.detection.transform import LetterboxTransform, TorchvisionTransform
else:

    def __getattr__(name: str):
        """The models still need the TensorFlow backend: their names say so when asked for."""
        from lambda_keras.backend.requirements import require_tensorflow

        if name in __all__:
            require_tensorflow(
                f"lambda_keras.detection.{name}", "uses TensorFlow ops", backends=("tensorflow",)
            )
        raise AttributeError(f"module 'lambda_keras.detection' has no attribute {name!r}")


__all__ = [
    "BoxHead",
    "FeaturePyramid",
    "MaskHead",
    "MaskRCNN",
    "RPNHead",
    "LetterboxTransform",
    "TorchvisionTransform",
    "WarmupStepDecay",
    "maskrcnn_resnet50_fpn",
    "ops",
    "targets",
]
