"""Region proposals from the RPN's outputs, with static shapes."""

from __future__ import annotations

from keras import ops as K

from lambda_keras.detection import ops
from lambda_keras.detection.ops._checks import Tensor
from lambda_keras.detection.ops.gather import gather_rows

__all__ = ["generate_proposals"]


def generate_proposals(
    objectness: Tensor,
    deltas: Tensor,
    anchors: dict[str, Tensor],
    image_shape: tuple[int, int],
    *,
    pre_nms_top_k: int,
    post_nms_top_k: int,
    nms_threshold: float = 0.7,
    min_size: float = 0.0,
    anchors_valid: dict[str, Tensor] | None = None,
) -> tuple[Tensor, Tensor]:
    """Decode, clip and suppress the RPN's boxes (Detectron2's FPN rule).

    Per level, the ``pre_nms_top_k`` highest-scoring anchors are decoded and clipped to the
    image; NMS at ``nms_threshold`` runs per level (boxes of different levels do not suppress
    each other), and the ``post_nms_top_k`` best survivors over all levels are the proposals.

    Args:
        objectness: ``[b, n]`` logits; deltas: ``[b, n, 4]``, in the order of ``anchors``.
        anchors: ``{"P<l>": [n_l, 4]}``
            ([`pyramid_anchors`][lambda_keras.detection.ops.pyramid_anchors]), or ``{"P<l>": [b,
            n_l, 4]}``, each image's own
            ([`torchvision_anchors`][lambda_keras.detection.ops.torchvision_anchors]).
        image_shape: ``(height, width)`` of the (padded) batch, or ``[b, 2]`` each image's
            size: boxes are clipped to it.
        min_size: Boxes with a side below this many pixels are dropped.
        anchors_valid: ``{"P<l>": [b, n_l]}`` bool: anchors that are False never propose.

    Returns:
        ``(proposals [b, post_nms_top_k, 4], valid [b, post_nms_top_k])``, no gradient.
    """
    objectness = K.stop_gradient(K.cast(objectness, "float32"))
    deltas = K.stop_gradient(K.cast(deltas, "float32"))
    if K.is_tensor(image_shape):
        image_shape = K.cast(image_shape, "float32")[:, None, :]
    boxes, scores, levels = [], [], []
    start = 0
    for index, level in enumerate(sorted(anchors, key=lambda key: int(key[1:]))):
        level_anchors = anchors[level]
        count = int(level_anchors.shape[-2])
        level_scores = objectness[:, start : start + count]
        if anchors_valid is not None:
            level_scores = K.where(anchors_valid[level], level_scores, -float("inf"))
        top_scores, top_indices = K.top_k(level_scores, min(pre_nms_top_k, count))
        level_deltas = gather_rows(deltas[:, start : start + count], top_indices)
        if len(level_anchors.shape) == 3:  # each image's own anchors
            chosen = gather_rows(level_anchors, top_indices)
        else:
            chosen = K.take(level_anchors, top_indices, axis=0)
        boxes.append(ops.clip_boxes(ops.decode_boxes(level_deltas, chosen), image_shape))
        scores.append(top_scores)
        levels.append(K.full_like(top_indices, index))
        start += count
    boxes, scores, levels = (K.concatenate(t, 1) for t in (boxes, scores, levels))
    heights, widths = boxes[..., 2] - boxes[..., 0], boxes[..., 3] - boxes[..., 1]
    usable = (heights > min_size) & (widths > min_size) & (scores > -float("inf"))
    scores = K.where(usable, scores, -1e9)
    k = min(post_nms_top_k, int(boxes.shape[1]))
    keep, valid = ops.batched_nms(boxes, scores, levels, k, nms_threshold, score_threshold=-1e8)
    proposals = K.where(valid[..., None], gather_rows(boxes, keep), 0.0)
    if k < post_nms_top_k:
        pad = [[0, 0], [0, post_nms_top_k - k]]
        proposals = K.pad(proposals, pad + [[0, 0]])
        valid = K.pad(valid, pad)
    return proposals, valid
