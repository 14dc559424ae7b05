"""The run's model: its backbone under the recipe's batch-norm mode with Mask R-CNN, started
from torchvision's COCO model when the run gives ``weights`` (on ``--backbone=torchvision_resnet``
the whole model but its class layers; on another backbone whose stages are 256/512/1024/2048
wide its FPN, RPN and heads but the class layers, which keep the standard widths then)."""

from __future__ import annotations

import keras

from lambda_keras.detection.mask_rcnn import MaskRCNN
from lambda_keras.detection.torchvision.mask_rcnn import is_class_layer, maskrcnn_resnet50_fpn
from lambda_keras.training.detection.config import DetectionRun

__all__ = ["build_model", "copy_heads"]

# Recipe head options that set widths: a model started from COCO weights keeps COCO's.
_HEAD_WIDTHS = ("fpn_channels", "box_head_units", "mask_head_channels")


def build_model(run: DetectionRun, num_classes: int) -> MaskRCNN:
    """The backbone the run names, under the recipe's batch-norm mode, with Mask R-CNN; with
    ``weights``, started from torchvision's COCO model (module docstring)."""
    config = run.config
    heads = run.recipe.head_options
    if config.weights is not None or run.backbone_class is None:
        heads = {k: value for k, value in heads.items() if k not in _HEAD_WIDTHS}
    if run.backbone_class is None:
        return maskrcnn_resnet50_fpn(
            config.weights, num_classes, reset_class_layers=config.weights is not None, **heads
        )
    backbone = run.backbone_class(
        config.depth,
        **dict(run.backbone_options),
        width_multiplier=config.width_multiplier,
        batch_norm=run.recipe.batch_norm,
        weights=config.backbone_weights,
    )
    model = MaskRCNN(backbone, num_classes, **heads)
    if config.weights is not None:
        model.build((None, None, None, 3))
        copy_heads(maskrcnn_resnet50_fpn(config.weights), model)
    return model


def copy_heads(source: keras.Model, target: MaskRCNN) -> None:
    """Copy ``source``'s FPN, RPN, box and mask heads into ``target`` (built), all but the
    class-specific layers; ``ValueError`` naming the first weight whose shape differs."""
    for name in ("fpn", "rpn_head", "box_head", "mask_head"):
        pairs = zip(getattr(source, name).weights, getattr(target, name).weights, strict=True)
        for src, dst in pairs:
            if is_class_layer(dst):
                continue
            if tuple(src.shape) != tuple(dst.shape):
                raise ValueError(
                    f"The COCO model's {src.path} has shape {tuple(src.shape)}; this model's "
                    f"{dst.path} has {tuple(dst.shape)}: its backbone's stages must be "
                    "256/512/1024/2048 wide and its heads of the standard widths."
                )
            dst.assign(src)
