"""Region proposals from the RPN's outputs, with static shapes."""

from __future__ import annotations

import tensorflow as tf

from lambda_keras.detection import ops

__all__ = ["generate_proposals"]


def generate_proposals(
    objectness: tf.Tensor,
    deltas: tf.Tensor,
    anchors: dict[str, tf.Tensor],
    image_shape: tuple[int, int],
    *,
    pre_nms_top_k: int,
    post_nms_top_k: int,
    nms_threshold: float = 0.7,
    min_size: float = 0.0,
) -> tuple[tf.Tensor, tf.Tensor]:
    """Decode, clip and suppress the RPN's boxes (Detectron2's FPN rule).

    Per level, the ``pre_nms_top_k`` highest-scoring anchors are decoded and clipped to the
    image; NMS at ``nms_threshold`` runs per level (boxes of different levels do not suppress
    each other), and the ``post_nms_top_k`` best survivors over all levels are the proposals.

    Args:
        objectness: ``[b, n]`` logits; deltas: ``[b, n, 4]``, in the order of ``anchors``.
        anchors: ``{"P<l>": [n_l, 4]}`` (:func:`~lambda_keras.detection.ops.pyramid_anchors`).
        image_shape: ``(height, width)`` of the (padded) batch.
        min_size: Boxes with a side below this many pixels are dropped.

    Returns:
        ``(proposals [b, post_nms_top_k, 4], valid [b, post_nms_top_k])``, no gradient.
    """
    objectness = tf.stop_gradient(tf.cast(objectness, tf.float32))
    deltas = tf.stop_gradient(tf.cast(deltas, tf.float32))
    boxes, scores, levels = [], [], []
    start = 0
    for index, level in enumerate(sorted(anchors, key=lambda key: int(key[1:]))):
        level_anchors = anchors[level]
        count = int(level_anchors.shape[0])
        k = min(pre_nms_top_k, count)
        top = tf.math.top_k(objectness[:, start : start + count], k)
        level_deltas = tf.gather(deltas[:, start : start + count], top.indices, batch_dims=1)
        decoded = ops.decode_boxes(level_deltas, tf.gather(level_anchors, top.indices))
        boxes.append(ops.clip_boxes(decoded, image_shape))
        scores.append(top.values)
        levels.append(tf.fill(tf.shape(top.values), index))
        start += count
    boxes, scores, levels = (tf.concat(t, 1) for t in (boxes, scores, levels))
    heights, widths = boxes[..., 2] - boxes[..., 0], boxes[..., 3] - boxes[..., 1]
    large_enough = (heights > min_size) & (widths > min_size)
    scores = tf.where(large_enough, scores, -1e9)
    k = min(post_nms_top_k, int(boxes.shape[1]))
    keep, valid = ops.batched_nms(boxes, scores, levels, k, nms_threshold, score_threshold=-1e8)
    proposals = tf.gather(boxes, keep, batch_dims=1)
    proposals = tf.where(valid[..., None], proposals, 0.0)
    if k < post_nms_top_k:
        pad = [[0, 0], [0, post_nms_top_k - k]]
        proposals = tf.pad(proposals, pad + [[0, 0]])
        valid = tf.pad(valid, pad)
    return proposals, valid
