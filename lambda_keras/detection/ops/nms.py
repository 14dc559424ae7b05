"""Non-maximum suppression with fixed-size, padded outputs (static shapes for XLA and TPUs)."""

from __future__ import annotations

import numpy as np
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
    greater than ``iou_threshold`` is dropped, and so on down the scores (torchvision's rule;
    IoU as :func:`box_iou`: an empty or inverted box overlaps nothing). Any box may be kept,
    wherever it lies; zero boxes give only padding. Eager, in ``tf.function`` and under XLA.

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
    count = tf.shape(scores)[-1]
    boxes, scores = _with_a_padding_box(_readable_boxes(boxes), scores)
    boxes, scores = _above(score_threshold, boxes, scores)
    # TensorFlow drops a box whose IoU with a kept one is >= its threshold; the contract (and
    # torchvision) drops it when > iou_threshold: the next float32 up turns one into the other.
    threshold = float(np.nextafter(np.float32(iou_threshold), np.float32(np.inf)))
    indices, num_valid = tf.image.non_max_suppression_padded(
        boxes,
        scores,
        max_output_size,
        iou_threshold=threshold,
        pad_to_max_output_size=True,
        canonicalized_coordinates=True,
    )
    valid = (tf.range(max_output_size) < tf.expand_dims(num_valid, -1)) & (indices < count)
    return tf.where(valid, indices, 0), valid


def _lowest(dtype: tf.DType) -> tf.Tensor:
    """The lowest finite score. Not -inf: TensorFlow's own score threshold multiplies scores by
    0 or 1, and -inf * 0 is NaN, which leaves its descending sort out of order."""
    return tf.constant(dtype.min, dtype)


def _with_a_padding_box(boxes: tf.Tensor, scores: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """One more box, last, that TensorFlow reads as padding (all coordinates 0, the lowest
    score): zero boxes then give padding, not a slicing error, with static shapes (XLA)."""
    leading = tf.shape(scores)[:-1]
    pad_boxes = tf.zeros(tf.concat([leading, [1, 4]], 0), boxes.dtype)
    pad_scores = tf.fill(tf.concat([leading, [1]], 0), _lowest(scores.dtype))
    return tf.concat([boxes, pad_boxes], -2), tf.concat([scores, pad_scores], -1)


def _above(
    score_threshold: float, boxes: tf.Tensor, scores: tf.Tensor
) -> tuple[tf.Tensor, tf.Tensor]:
    """Boxes scoring at most ``score_threshold`` become padding (the all-zero box, which
    TensorFlow never returns and which overlaps nothing) with the lowest score, so that the
    kept boxes still come in decreasing score order (boxes are positive here, see
    :func:`_readable_boxes`)."""
    if score_threshold == float("-inf"):
        return boxes, scores
    keep = scores > tf.cast(score_threshold, scores.dtype)
    boxes = tf.where(keep[..., None], boxes, tf.zeros_like(boxes))
    return boxes, tf.where(keep, scores, _lowest(scores.dtype))


def _readable_boxes(boxes: tf.Tensor) -> tf.Tensor:
    """The boxes as ``tf.image.non_max_suppression_padded`` must see them to keep the contract.

    * An inverted box (``y2 < y1`` or ``x2 < x1``) overlaps nothing (IoU 0 with every box, as in
      :func:`box_iou` and torchvision): it becomes the empty box at its first corner. Every box
      then has ``y1 <= y2`` and ``x1 <= x2``, so TensorFlow is told the coordinates are
      canonical (otherwise it reorders every box of the batch by the first box's order).
    * TensorFlow reads a box whose coordinates are all <= 0 as padding and never returns it:
      when any coordinate is <= 0 all boxes are shifted so that the smallest is 1 (IoU does
      not change under a shift).
    """
    y1, x1, y2, x2 = tf.unstack(boxes, axis=-1)
    inverted = (y2 < y1) | (x2 < x1)
    boxes = tf.stack([y1, x1, tf.where(inverted, y1, y2), tf.where(inverted, x1, x2)], axis=-1)
    lowest = tf.reduce_min(boxes)
    return boxes + tf.where(lowest > 0, 0.0, 1.0 - lowest)


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
