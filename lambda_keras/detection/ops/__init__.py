"""Detection ops others reuse, each tested alone: boxes, anchors, ROIAlign, NMS, masks.

Box convention: ``(y1, x1, y2, x2)`` in absolute image pixels, an edge at 0 being the image's
top/left edge ([boxes][lambda_keras.detection.ops.boxes]); ROIAlign's half-pixel rule is in
[roi_pooling][lambda_keras.detection.ops.roi_pooling]. Backend-neutral ``keras.ops`` with static
output sizes, usable inside Keras layers on JAX, TensorFlow and PyTorch, under ``jax.jit``,
``tf.distribute`` and ``jit_compile=True`` (on TensorFlow, [`nms`][lambda_keras.detection.ops.nms]
runs TensorFlow's own kernel: [suppression][lambda_keras.detection.ops.suppression]). The
``*_on_host`` pastes take and return NumPy arrays (a photo's masks after the model).
"""

from lambda_keras.detection.ops.anchors import (
    DEFAULT_ASPECT_RATIOS,
    DEFAULT_SIZES,
    anchors_inside,
    pyramid_anchors,
    torchvision_anchors,
)
from lambda_keras.detection.ops.boxes import (
    BBOX_DELTA_CLIP,
    BOX_WEIGHTS,
    box_area,
    box_iou,
    clip_boxes,
    decode_boxes,
    encode_boxes,
    from_coco,
    to_coco,
)
from lambda_keras.detection.ops.masks import (
    crop_masks,
    paste_masks,
    paste_masks_on_host,
    paste_masks_torchvision,
    paste_masks_torchvision_on_host,
)
from lambda_keras.detection.ops.roi_pooling import (
    assign_pyramid_levels,
    multilevel_roi_align,
    roi_align,
)
from lambda_keras.detection.ops.suppression import batched_nms, greedy_nms, nms

__all__ = [
    "BBOX_DELTA_CLIP",
    "BOX_WEIGHTS",
    "DEFAULT_ASPECT_RATIOS",
    "DEFAULT_SIZES",
    "anchors_inside",
    "assign_pyramid_levels",
    "batched_nms",
    "box_area",
    "box_iou",
    "clip_boxes",
    "crop_masks",
    "decode_boxes",
    "encode_boxes",
    "from_coco",
    "greedy_nms",
    "multilevel_roi_align",
    "nms",
    "paste_masks",
    "paste_masks_on_host",
    "paste_masks_torchvision",
    "paste_masks_torchvision_on_host",
    "pyramid_anchors",
    "roi_align",
    "to_coco",
    "torchvision_anchors",
]
