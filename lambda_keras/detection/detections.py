"""Final detections from the box head: per-class boxes, scores, per-class NMS, fixed size."""

from __future__ import annotations

import tensorflow as tf

from lambda_keras.detection import ops

__all__ = ["select_detections"]


def select_detections(
    logits: tf.Tensor,
    deltas: tf.Tensor,
    rois: tf.Tensor,
    rois_valid: tf.Tensor,
    image_shape: tuple[int, int],
    *,
    max_detections: int = 100,
    score_threshold: float = 0.05,
    nms_threshold: float = 0.5,
    candidates: int = 1000,
    min_size: float = 0.0,
) -> dict[str, tf.Tensor]:
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
    scores = tf.nn.softmax(tf.cast(logits, tf.float32))[..., 1:]  # [b, R, C]
    num_classes = scores.shape[-1]
    boxes = ops.decode_boxes(tf.cast(deltas, tf.float32), rois[:, :, None, :], ops.BOX_WEIGHTS)
    if tf.is_tensor(image_shape):
        image_shape = tf.cast(image_shape, tf.float32)[:, None, None, :]
    boxes = ops.clip_boxes(boxes, image_shape)
    heights, widths = boxes[..., 2] - boxes[..., 0], boxes[..., 3] - boxes[..., 1]
    large_enough = (heights > min_size) & (widths > min_size)
    usable = rois_valid[..., None] & (scores > score_threshold) & large_enough
    scores = tf.where(usable, scores, -1.0)
    batch = tf.shape(scores)[0]
    flat_scores = tf.reshape(scores, [batch, -1])
    flat_boxes = tf.reshape(boxes, [batch, -1, 4])
    k = min(candidates, int(flat_scores.shape[1]))
    top = tf.math.top_k(flat_scores, k)
    classes = top.indices % num_classes
    top_boxes = tf.gather(flat_boxes, top.indices, batch_dims=1)
    d = min(max_detections, k)
    keep, valid = ops.batched_nms(top_boxes, top.values, classes, d, nms_threshold, 0.0)
    result = {
        "boxes": tf.where(valid[..., None], tf.gather(top_boxes, keep, batch_dims=1), 0.0),
        "scores": tf.where(valid, tf.gather(top.values, keep, batch_dims=1), 0.0),
        "classes": tf.where(valid, tf.gather(classes, keep, batch_dims=1), -1),
        "valid": valid,
    }
    if d < max_detections:
        pad = [[0, 0], [0, max_detections - d]]
        result = {
            "boxes": tf.pad(result["boxes"], pad + [[0, 0]]),
            "scores": tf.pad(result["scores"], pad),
            "classes": tf.pad(result["classes"], pad, constant_values=-1),
            "valid": tf.pad(result["valid"], pad),
        }
    return result
