"""[nms][lambda_keras.detection.ops.nms] on the TensorFlow backend: TensorFlow's
``tf.image.non_max_suppression_padded`` kernel, fed so that it keeps the contract (the boxes
already ranked, finite and checked by ``nms``). Imported only on that backend."""

from __future__ import annotations

import numpy as np
import tensorflow as tf


def suppress(boxes, alive, max_output_size: int, iou_threshold: float):
    """``(positions, valid)`` ``[B, max_output_size]`` of the boxes ``[B, n, 4]`` that the
    contract keeps, given in its order with ``alive`` ``[B, n]`` (see ``nms._run``)."""
    count = tf.shape(alive)[-1]
    # The kernel sorts by score: distinct decreasing scores keep the order the boxes come in.
    ranks = tf.cast(count - tf.range(count), tf.float32)[None, :]
    scores = tf.where(alive, ranks, _lowest(tf.float32))
    boxes = tf.where(alive[..., None], _readable_boxes(boxes), tf.zeros_like(boxes))
    boxes, scores = _with_a_padding_box(boxes, scores)
    # TensorFlow drops a box whose IoU with a kept one is >= its threshold; the contract (and
    # torchvision) drops it when > iou_threshold: the next float32 up turns one into the other.
    threshold = float(np.nextafter(np.float32(iou_threshold), np.float32(np.inf)))
    positions, num_valid = tf.image.non_max_suppression_padded(
        boxes,
        scores,
        max_output_size,
        iou_threshold=threshold,
        pad_to_max_output_size=True,
        canonicalized_coordinates=True,
    )
    valid = (tf.range(max_output_size) < tf.expand_dims(num_valid, -1)) & (positions < count)
    return tf.where(valid, positions, 0), valid


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


def _readable_boxes(boxes: tf.Tensor) -> tf.Tensor:
    """The boxes as ``tf.image.non_max_suppression_padded`` must see them to keep the contract
    (they are finite here).

    * An inverted box (``y2 < y1`` or ``x2 < x1``) overlaps nothing (IoU 0 with every box, as in
      [`box_iou`][lambda_keras.detection.ops.box_iou] and torchvision): it becomes the empty box at
      its first corner. Every box then has ``y1 <= y2`` and ``x1 <= x2``, so TensorFlow is told the
      coordinates are canonical (otherwise it reorders every box of the batch by the first box's
      order).
    * TensorFlow reads a box whose coordinates are all <= 0 as padding and never returns it:
      when any coordinate is <= 0 all boxes are shifted so that the smallest is 1 (IoU does
      not change under a shift). A box left out by the score threshold is made all zero after
      the shift: padding.
    """
    y1, x1, y2, x2 = tf.unstack(boxes, axis=-1)
    inverted = (y2 < y1) | (x2 < x1)
    boxes = tf.stack([y1, x1, tf.where(inverted, y1, y2), tf.where(inverted, x1, x2)], axis=-1)
    lowest = tf.reduce_min(boxes)
    return boxes + tf.where(lowest > 0, 0.0, 1.0 - lowest)
