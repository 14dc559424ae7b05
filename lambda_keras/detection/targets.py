"""Training targets of Mask R-CNN with static shapes: anchor labels for the RPN, sampled RoIs
with their classes, box targets and mask targets for the heads.

Ground truth arrives padded to a fixed number of instances ``G`` per image:
``boxes [batch, G, 4]`` (image pixels, ``(y1, x1, y2, x2)``), ``classes [batch, G]`` int32
(0-based labels, -1 marks padding) and ``masks [batch, G, M, M]``, each instance's mask cropped
to its own box and resized to ``M x M`` (the data pipeline does that, so that masks cost
``M * M`` per instance at any image size). Random sampling uses random keys and a top-k
threshold, never a data-dependent shape, so the step compiles with XLA.
"""

from __future__ import annotations

import dataclasses

import tensorflow as tf

from lambda_keras.detection import ops

__all__ = ["RoiTargets", "crop_instance_masks", "rpn_targets", "sample_rois"]


def _matches(candidates, gt_boxes, gt_valid):
    """``[b, n]`` best IoU with a valid ground-truth box (-1 without one) and its index."""
    iou = ops.box_iou(candidates, gt_boxes)  # [b, n, G]
    iou = tf.where(gt_valid[:, None, :], iou, -1.0)
    return tf.reduce_max(iou, -1), tf.argmax(iou, -1, output_type=tf.int32), iou


def rpn_targets(
    anchors: tf.Tensor,
    gt_boxes: tf.Tensor,
    gt_classes: tf.Tensor,
    *,
    positive_iou: float = 0.7,
    negative_iou: float = 0.3,
    batch_size_per_image: int = 256,
    positive_fraction: float = 0.5,
) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """Labels and box targets of every anchor (Faster R-CNN).

    An anchor is positive at IoU >= ``positive_iou`` with a ground-truth box, or when it is
    (one of) the best anchors of a ground-truth box; negative below ``negative_iou``; ignored
    between. ``batch_size_per_image`` anchors are sampled per image, at most
    ``positive_fraction`` positives, the rest negatives.

    Args:
        anchors: ``[n, 4]``; gt_boxes ``[b, G, 4]``; gt_classes ``[b, G]`` (-1: padding).

    Returns:
        ``(labels, weights, deltas)``: ``[b, n]`` float 1/0 objectness labels, ``[b, n]`` 1.0
        for a sampled anchor else 0, ``[b, n, 4]`` box deltas (weights 1, 1, 1, 1) to the
        matched box.
    """
    gt_valid = gt_classes >= 0
    batch = tf.shape(gt_boxes)[0]
    anchors = tf.broadcast_to(anchors[None], [batch, tf.shape(anchors)[0], 4])
    best, index, iou = _matches(anchors, gt_boxes, gt_valid)
    best_per_gt = tf.reduce_max(iou, axis=1, keepdims=True)  # [b, 1, G]
    low_quality = tf.reduce_any(
        (iou >= best_per_gt - 1e-7) & (best_per_gt > 0) & gt_valid[:, None, :], -1
    )
    positive = (best >= positive_iou) | low_quality
    negative = (best < negative_iou) & ~positive
    num_positive = int(batch_size_per_image * positive_fraction)
    positive = _sample(positive, tf.fill([batch], num_positive), num_positive)
    remaining = batch_size_per_image - tf.reduce_sum(tf.cast(positive, tf.int32), 1)
    negative = _sample(negative, remaining, batch_size_per_image)
    matched = tf.gather(gt_boxes, index, batch_dims=1)
    deltas = ops.encode_boxes(_nonempty(matched), _nonempty(anchors))
    return (
        tf.cast(positive, tf.float32),
        tf.cast(positive | negative, tf.float32),
        tf.where(positive[..., None], deltas, 0.0),
    )


def _sample(mask, counts, max_count: int):
    """Per image, a random subset of at most ``counts`` (``[b]``, each <= ``max_count``) of the
    True entries of ``mask`` (``[b, n]``): returns the ``[b, n]`` bool selection."""
    keys = tf.where(mask, tf.random.uniform(tf.shape(mask)), -1.0)
    k = min(max_count, int(mask.shape[1]))
    top = tf.math.top_k(keys, k).values  # [b, k], descending
    position = tf.clip_by_value(counts - 1, 0, k - 1)
    threshold = tf.gather(top, position[:, None], batch_dims=1)
    return mask & (keys >= threshold) & (counts[:, None] > 0)


def _nonempty(boxes):
    """Boxes with at least 1e-3 pixel of height and width (padding and degenerate boxes encode
    to finite deltas; their targets are masked out anyway)."""
    y1, x1, y2, x2 = tf.unstack(boxes, axis=-1)
    return tf.stack([y1, x1, tf.maximum(y2, y1 + 1e-3), tf.maximum(x2, x1 + 1e-3)], -1)


@dataclasses.dataclass
class RoiTargets:
    """The sampled RoIs of a batch and their targets; ``R`` RoIs per image, foreground first.

    Attributes:
        rois: ``[b, R, 4]`` boxes.
        valid: ``[b, R]`` bool, False for padding (fewer candidates than ``R``).
        classes: ``[b, R]`` int32, 0 for background, ``label + 1`` for foreground.
        deltas: ``[b, R, 4]`` box targets (weights 10, 10, 5, 5) to the matched box.
        matched: ``[b, R]`` int32 index of the matched ground-truth instance.
        num_foreground: ``F``, the static number of leading slots that may be foreground.
    """

    rois: tf.Tensor
    valid: tf.Tensor
    classes: tf.Tensor
    deltas: tf.Tensor
    matched: tf.Tensor
    num_foreground: int


def sample_rois(
    proposals: tf.Tensor,
    proposals_valid: tf.Tensor,
    gt_boxes: tf.Tensor,
    gt_classes: tf.Tensor,
    *,
    batch_size_per_image: int = 512,
    positive_fraction: float = 0.25,
    foreground_iou: float = 0.5,
) -> RoiTargets:
    """Sample the RoIs the box and mask heads train on (Mask R-CNN: 512 at 25% foreground).

    The ground-truth boxes join the proposals as candidates. A candidate is foreground at IoU
    >= ``foreground_iou`` with a ground-truth box, else background. The first
    ``F = batch_size_per_image * positive_fraction`` slots hold the sampled foreground (padded
    with background or nothing when there is less), the rest background.
    """
    gt_valid = gt_classes >= 0
    candidates = tf.concat([proposals, gt_boxes], 1)
    valid = tf.concat([proposals_valid, gt_valid], 1)
    best, index, _ = _matches(candidates, gt_boxes, gt_valid)
    foreground = valid & (best >= foreground_iou)
    background = valid & ~foreground
    n = int(candidates.shape[1])
    num_fg = min(int(batch_size_per_image * positive_fraction), n)
    fg_keys = tf.where(foreground, tf.random.uniform(tf.shape(best)), -1.0)
    fg_top = tf.math.top_k(fg_keys, num_fg)
    fg_taken = fg_top.values >= 0  # [b, F]
    bg_count = batch_size_per_image - tf.reduce_sum(tf.cast(fg_taken, tf.int32), 1)
    bg_keys = tf.where(background, tf.random.uniform(tf.shape(best)), -1.0)
    bg_top = tf.math.top_k(bg_keys, min(batch_size_per_image, n))
    rank = tf.range(min(batch_size_per_image, n))[None]
    bg_taken = (bg_top.values >= 0) & (rank < bg_count[:, None])
    # Foreground slots first, then background; keep the first `batch_size_per_image` taken
    # (padding with untaken slots when there are fewer candidates).
    slots = tf.concat([fg_top.indices, bg_top.indices], 1)
    taken = tf.concat([fg_taken, bg_taken], 1)
    order_key = tf.where(taken, -tf.cast(tf.range(tf.shape(slots)[1]), tf.float32), -1e9)
    order = tf.math.top_k(order_key, min(batch_size_per_image, int(slots.shape[1]))).indices
    slots = tf.gather(slots, order, batch_dims=1)
    taken = tf.gather(taken, order, batch_dims=1)
    missing = batch_size_per_image - int(slots.shape[1])
    if missing > 0:
        slots = tf.pad(slots, [[0, 0], [0, missing]])
        taken = tf.pad(taken, [[0, 0], [0, missing]])
    return _roi_targets(candidates, slots, taken, foreground, index, gt_boxes, gt_classes, num_fg)


def _roi_targets(candidates, slots, taken, foreground, index, gt_boxes, gt_classes, num_fg):
    rois = tf.stop_gradient(tf.gather(candidates, slots, batch_dims=1))
    matched = tf.gather(index, slots, batch_dims=1)
    is_fg = tf.gather(foreground, slots, batch_dims=1) & taken
    labels = tf.gather(gt_classes, matched, batch_dims=1) + 1
    matched_boxes = tf.gather(gt_boxes, matched, batch_dims=1)
    deltas = ops.encode_boxes(_nonempty(matched_boxes), _nonempty(rois), ops.BOX_WEIGHTS)
    return RoiTargets(
        rois=rois,
        valid=taken,
        classes=tf.where(is_fg, labels, 0),
        deltas=tf.where(is_fg[..., None], deltas, 0.0),
        matched=matched,
        num_foreground=num_fg,
    )


def crop_instance_masks(
    instance_masks: tf.Tensor,
    instance_boxes: tf.Tensor,
    rois: tf.Tensor,
    matched: tf.Tensor,
    mask_size: int = 28,
) -> tf.Tensor:
    """Mask targets: each RoI's matched instance mask ROIAligned to ``mask_size`` in the RoI.

    Args:
        instance_masks: ``[b, G, M, M]`` masks in their own boxes' frames.
        instance_boxes: ``[b, G, 4]`` those boxes.
        rois: ``[b, R, 4]``; matched: ``[b, R]`` instance index per RoI.

    Returns:
        ``[b, R, mask_size, mask_size]`` soft targets in ``[0, 1]``.
    """
    m = tf.cast(tf.shape(instance_masks)[-1], tf.float32)
    box = _nonempty(tf.gather(instance_boxes, matched, batch_dims=1))
    scale = m / tf.stack([box[..., 2] - box[..., 0], box[..., 3] - box[..., 1]] * 2, -1)
    origin = tf.stack([box[..., 0], box[..., 1]] * 2, -1)
    in_mask_frame = (rois - origin) * scale
    return ops.crop_masks(instance_masks, in_mask_frame, matched, mask_size=mask_size)
