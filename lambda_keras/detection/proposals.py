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
    anchors_valid: dict[str, tf.Tensor] | None = None,
) -> tuple[tf.Tensor, tf.Tensor]:
    """Decode, clip and suppress the RPN's boxes (Detectron2's FPN rule).

    Per level, the ``pre_nms_top_k`` highest-scoring anchors are decoded and clipped to the
    image; NMS at ``nms_threshold`` runs per level (boxes of different levels do not suppress
    each other), and the ``post_nms_top_k`` best survivors over all levels are the proposals.

    Args:
        objectness: ``[b, n]`` logits; deltas: ``[b, n, 4]``, in the order of ``anchors``.
        anchors: ``{"P<l>": [n_l, 4]}`` (:func:`~lambda_keras.detection.ops.pyramid_anchors`),
            or ``{"P<l>": [b, n_l, 4]}``, each image's own
            (:func:`~lambda_keras.detection.ops.torchvision_anchors`).
        image_shape: ``(height, width)`` of the (padded) batch, or ``[b, 2]`` each image's
            size: boxes are clipped to it.
        min_size: Boxes with a side below this many pixels are dropped.
        anchors_valid: ``{"P<l>": [b, n_l]}`` bool: anchors that are False never propose.

    Returns:
        ``(proposals [b, post_nms_top_k, 4], valid [b, post_nms_top_k])``, no gradient.
    """
    objectness = tf.stop_gradient(tf.cast(objectness, tf.float32))
    deltas = tf.stop_gradient(tf.cast(deltas, tf.float32))
    if tf.is_tensor(image_shape):
        image_shape = tf.cast(image_shape, tf.float32)[:, None, :]
    boxes, scores, levels = [], [], []
    start = 0
    for index, level in enumerate(sorted(anchors, key=lambda key: int(key[1:]))):
        level_anchors = anchors[level]
        per_image = level_anchors.shape.rank == 3
        count = int(level_anchors.shape[-2])
        level_scores = objectness[:, start : start + count]
        if anchors_valid is not None:
            level_scores = tf.where(anchors_valid[level], level_scores, -float("inf"))
        k = min(pre_nms_top_k, count)
        top = tf.math.top_k(level_scores, k)
        level_deltas = tf.gather(deltas[:, start : start + count], top.indices, batch_dims=1)
        chosen = tf.gather(level_anchors, top.indices, batch_dims=1 if per_image else 0)
        boxes.append(ops.clip_boxes(ops.decode_boxes(level_deltas, chosen), image_shape))
        scores.append(top.values)
        levels.append(tf.fill(tf.shape(top.values), index))
        start += count
    boxes, scores, levels = (tf.concat(t, 1) for t in (boxes, scores, levels))
    heights, widths = boxes[..., 2] - boxes[..., 0], boxes[..., 3] - boxes[..., 1]
    usable = (heights > min_size) & (widths > min_size) & (scores > -float("inf"))
    scores = tf.where(usable, scores, -1e9)
    k = min(post_nms_top_k, int(boxes.shape[1]))
    keep, valid = ops.batched_nms(boxes, scores, levels, k, nms_threshold, score_threshold=-1e8)
    proposals = tf.gather(boxes, keep, batch_dims=1)
    proposals = tf.where(valid[..., None], proposals, 0.0)
    if k < post_nms_top_k:
        pad = [[0, 0], [0, post_nms_top_k - k]]
        proposals = tf.pad(proposals, pad + [[0, 0]])
        valid = tf.pad(valid, pad)
    return proposals, valid
