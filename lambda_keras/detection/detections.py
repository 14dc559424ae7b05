"""Final detections from the box head: per-class boxes, scores, per-class NMS, fixed size."""

from __future__ import annotations

from keras import ops as K

from lambda_keras.detection import ops
from lambda_keras.detection.ops._checks import Tensor
from lambda_keras.detection.ops.gather import gather_rows

__all__ = ["select_detections"]


def select_detections(
    logits: Tensor,
    deltas: Tensor,
    rois: Tensor,
    rois_valid: Tensor,
    image_shape: tuple[int, int],
    *,
    max_detections: int = 100,
    score_threshold: float = 0.05,
    nms_threshold: float = 0.5,
    candidates: int = 1000,
    min_size: float = 0.0,
) -> dict[str, Tensor]:
    """Mask R-CNN's inference rule: softmax scores, class-specific boxes clipped to the image,
    scores above ``score_threshold``, per-class NMS at ``nms_threshold``, the best
    ``max_detections``. Before NMS only the ``candidates`` best (box, class) pairs are kept (a
    fixed size for XLA; they hold every detection that can survive in practice).

    Args:
        logits: ``[b, R, C + 1]`` (class 0 is background); deltas: ``[b, R, C, 4]``;
        rois: ``[b, R, 4]`` and their validity ``[b, R]``.
        image_shape: ``(height, width)`` of the batch, or ``[b, 2]`` each image's size: boxes
            are clipped to it.
        min_size: Boxes with a side of at most this many pixels are dropped.

    Returns:
        ``{"boxes": [b, D, 4], "scores": [b, D], "classes": [b, D] int32 (0-based labels,
        -1 for padding), "valid": [b, D] bool}`` with ``D = max_detections``, best first.
    """
    scores = K.softmax(K.cast(logits, "float32"))[..., 1:]  # [b, R, C]
    num_classes = scores.shape[-1]
    boxes = ops.decode_boxes(K.cast(deltas, "float32"), rois[:, :, None, :], ops.BOX_WEIGHTS)
    if K.is_tensor(image_shape):
        image_shape = K.cast(image_shape, "float32")[:, None, None, :]
    boxes = ops.clip_boxes(boxes, image_shape)
    heights, widths = boxes[..., 2] - boxes[..., 0], boxes[..., 3] - boxes[..., 1]
    large_enough = (heights > min_size) & (widths > min_size)
    usable = rois_valid[..., None] & (scores > score_threshold) & large_enough
    scores = K.where(usable, scores, -1.0)
    # The (box, class) pairs of an image, a static count even when the batch size is not
    # (Keras' predict function relaxes the batch dimension after a smaller last batch).
    pairs = int(scores.shape[1]) * int(num_classes)
    flat_scores = K.reshape(scores, (-1, pairs))
    flat_boxes = K.reshape(boxes, (-1, pairs, 4))
    k = min(candidates, pairs)
    top_scores, top_indices = K.top_k(flat_scores, k)
    classes = top_indices % num_classes
    top_boxes = gather_rows(flat_boxes, top_indices)
    d = min(max_detections, k)
    keep, valid = ops.batched_nms(top_boxes, top_scores, classes, d, nms_threshold, 0.0)
    result = {
        "boxes": K.where(valid[..., None], gather_rows(top_boxes, keep), 0.0),
        "scores": K.where(valid, gather_rows(top_scores, keep), 0.0),
        "classes": K.where(valid, gather_rows(classes, keep), -1),
        "valid": valid,
    }
    if d < max_detections:
        pad = [[0, 0], [0, max_detections - d]]
        result = {
            "boxes": K.pad(result["boxes"], pad + [[0, 0]]),
            "scores": K.pad(result["scores"], pad),
            "classes": K.pad(result["classes"], pad, constant_values=-1),
            "valid": K.pad(result["valid"], pad),
        }
    return result
