"""Non-maximum suppression with fixed-size, padded outputs (static shapes for XLA and TPUs)."""

from __future__ import annotations

import tensorflow as tf

from lambda_keras import _validation as v
from lambda_keras.detection.ops import _checks

__all__ = ["batched_nms", "nms"]


def nms(
    boxes: tf.Tensor,
    scores: tf.Tensor,
    max_output_size: int,
    iou_threshold: float = 0.5,
    score_threshold: float = float("-inf"),
) -> tuple[tf.Tensor, tf.Tensor]:
    """Greedy NMS, padded: the highest-scoring box is kept, every box whose IoU with it is
    greater than ``iou_threshold`` is dropped, and so on down the scores.

    Args:
        boxes: ``[..., n, 4]`` boxes ``(y1, x1, y2, x2)`` (any leading batch dimensions).
        scores: ``[..., n]``.
        max_output_size: How many boxes to keep at most (the padded output size).
        iou_threshold: Boxes overlapping a kept box by more than this are dropped.
        score_threshold: Boxes scoring at most this are dropped.

    Returns:
        ``(indices, valid)``: ``[..., max_output_size]`` int32 indices into the ``n`` boxes, in
        decreasing score order, and ``[..., max_output_size]`` bool, True for a kept box; the
        padding has ``valid=False`` and index 0.
    """
    max_output_size = v.positive_int("max_output_size", max_output_size)
    v.number_in("iou_threshold", iou_threshold, 0.0, 1.0)
    boxes = _checks.boxes("boxes", boxes, layout="[..., n, 4]")
    rank = None if boxes.shape.rank is None else boxes.shape.rank - 1
    scores = _checks.tensor("scores", scores, rank, "[..., n]")
    if rank is not None:
        _checks.same_sizes("boxes", boxes, "scores", scores, axes=rank)
    # TF sorts the coordinates of each box itself unless told they are already canonical.
    indices, num_valid = tf.image.non_max_suppression_padded(
        boxes,
        scores,
        max_output_size,
        iou_threshold=iou_threshold,
        score_threshold=score_threshold,
        pad_to_max_output_size=True,
    )
    valid = tf.range(max_output_size) < tf.expand_dims(num_valid, -1)
    return tf.where(valid, indices, 0), valid


def batched_nms(
    boxes: tf.Tensor,
    scores: tf.Tensor,
    classes: tf.Tensor,
    max_output_size: int,
    iou_threshold: float = 0.5,
    score_threshold: float = float("-inf"),
) -> tuple[tf.Tensor, tf.Tensor]:
    """Per-class NMS in one pass: boxes of different classes never suppress each other.

    Each class's boxes are shifted by ``class * (largest coordinate + 1)`` so that boxes of
    different classes cannot overlap, then :func:`nms` runs once (torchvision's
    ``batched_nms`` trick).

    Args:
        boxes: ``[..., n, 4]``; scores: ``[..., n]``; classes: ``[..., n]`` integer classes.

    Returns:
        As :func:`nms`.
    """
    boxes = _checks.boxes("boxes", boxes, layout="[..., n, 4]")
    classes = tf.convert_to_tensor(classes)
    if boxes.shape.rank is not None:
        classes = _checks.tensor("classes", classes, boxes.shape.rank - 1, "[..., n]", None)
        _checks.same_sizes("boxes", boxes, "classes", classes, axes=boxes.shape.rank - 1)
    offset = tf.reduce_max(tf.abs(boxes)) + 1.0
    shifted = boxes + (tf.cast(classes, tf.float32) * offset)[..., None]
    return nms(shifted, scores, max_output_size, iou_threshold, score_threshold)
