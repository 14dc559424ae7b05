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

import keras
from keras import ops as K

from lambda_keras.detection import ops
from lambda_keras.detection.ops._checks import Tensor
from lambda_keras.detection.ops.gather import gather_rows

__all__ = ["RoiTargets", "crop_instance_masks", "rpn_targets", "sample_rois"]


def _matches(candidates, gt_boxes, gt_valid):
    """``[b, n]`` best IoU with a valid ground-truth box (-1 without one) and its index."""
    iou = ops.box_iou(candidates, gt_boxes)  # [b, n, G]
    iou = K.where(gt_valid[:, None, :], iou, -1.0)
    return K.max(iou, -1), K.cast(K.argmax(iou, -1), "int32"), iou


def rpn_targets(
    anchors: Tensor,
    gt_boxes: Tensor,
    gt_classes: Tensor,
    *,
    positive_iou: float = 0.7,
    negative_iou: float = 0.3,
    batch_size_per_image: int = 256,
    positive_fraction: float = 0.5,
    seed=None,
) -> tuple[Tensor, Tensor, Tensor]:
    """Labels and box targets of every anchor (Faster R-CNN).

    An anchor is positive at IoU >= ``positive_iou`` with a ground-truth box, or when it is
    (one of) the best anchors of a ground-truth box; negative below ``negative_iou``; ignored
    between. ``batch_size_per_image`` anchors are sampled per image, at most
    ``positive_fraction`` positives, the rest negatives.

    Args:
        anchors: ``[n, 4]``; gt_boxes ``[b, G, 4]``; gt_classes ``[b, G]`` (-1: padding).
        seed: The sampling's seed: an int, a ``keras.random.SeedGenerator`` or None.

    Returns:
        ``(labels, weights, deltas)``: ``[b, n]`` float 1/0 objectness labels, ``[b, n]`` 1.0
        for a sampled anchor else 0, ``[b, n, 4]`` box deltas (weights 1, 1, 1, 1) to the
        matched box.
    """
    gt_valid = gt_classes >= 0
    batch = K.shape(gt_boxes)[0]
    anchors = K.broadcast_to(anchors[None], (batch, K.shape(anchors)[0], 4))
    best, index, iou = _matches(anchors, gt_boxes, gt_valid)
    best_per_gt = K.max(iou, axis=1, keepdims=True)  # [b, 1, G]
    low_quality = K.any((iou >= best_per_gt - 1e-7) & (best_per_gt > 0) & gt_valid[:, None, :], -1)
    positive = (best >= positive_iou) | low_quality
    negative = (best < negative_iou) & ~positive
    num_positive = int(batch_size_per_image * positive_fraction)
    positive = _sample(positive, K.full((batch,), num_positive, dtype="int32"), num_positive, seed)
    remaining = batch_size_per_image - K.sum(K.cast(positive, "int32"), 1)
    negative = _sample(negative, remaining, batch_size_per_image, seed)
    matched = gather_rows(gt_boxes, index)
    deltas = ops.encode_boxes(_nonempty(matched), _nonempty(anchors))
    return (
        K.cast(positive, "float32"),
        K.cast(positive | negative, "float32"),
        K.where(positive[..., None], deltas, 0.0),
    )


def _random_keys(mask, seed):
    """A uniform key in [0, 1) per True entry of ``mask``, -1 elsewhere."""
    return K.where(mask, keras.random.uniform(K.shape(mask), seed=seed), -1.0)


def _sample(mask, counts, max_count: int, seed):
    """Per image, a random subset of at most ``counts`` (``[b]``, each <= ``max_count``) of the
    True entries of ``mask`` (``[b, n]``): returns the ``[b, n]`` bool selection."""
    keys = _random_keys(mask, seed)
    k = min(max_count, int(mask.shape[1]))
    top, _ = K.top_k(keys, k)  # [b, k], descending
    position = K.clip(counts - 1, 0, k - 1)
    threshold = gather_rows(top, position[:, None])
    return mask & (keys >= threshold) & (counts[:, None] > 0)


def _nonempty(boxes):
    """Boxes with at least 1e-3 pixel of height and width (padding and degenerate boxes encode
    to finite deltas; their targets are masked out anyway)."""
    y1, x1, y2, x2 = K.unstack(boxes, 4, axis=-1)
    return K.stack([y1, x1, K.maximum(y2, y1 + 1e-3), K.maximum(x2, x1 + 1e-3)], -1)


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

    rois: Tensor
    valid: Tensor
    classes: Tensor
    deltas: Tensor
    matched: Tensor
    num_foreground: int


def sample_rois(
    proposals: Tensor,
    proposals_valid: Tensor,
    gt_boxes: Tensor,
    gt_classes: Tensor,
    *,
    batch_size_per_image: int = 512,
    positive_fraction: float = 0.25,
    foreground_iou: float = 0.5,
    seed=None,
) -> RoiTargets:
    """Sample the RoIs the box and mask heads train on (Mask R-CNN: 512 at 25% foreground).

    The ground-truth boxes join the proposals as candidates. A candidate is foreground at an IoU
    of at least ``foreground_iou`` with a ground-truth box, else background. The first
    ``F = batch_size_per_image * positive_fraction`` slots hold the sampled foreground (padded
    with background or nothing when there is less), the rest background.

    ``seed``: the sampling's seed (an int, a ``keras.random.SeedGenerator`` or None).
    """
    gt_valid = gt_classes >= 0
    candidates = K.concatenate([proposals, gt_boxes], 1)
    valid = K.concatenate([proposals_valid, gt_valid], 1)
    best, index, _ = _matches(candidates, gt_boxes, gt_valid)
    foreground = valid & (best >= foreground_iou)
    background = valid & ~foreground
    n = int(candidates.shape[1])
    num_fg = min(int(batch_size_per_image * positive_fraction), n)
    fg_values, fg_indices = K.top_k(_random_keys(foreground, seed), num_fg)
    fg_taken = fg_values >= 0  # [b, F]
    bg_count = batch_size_per_image - K.sum(K.cast(fg_taken, "int32"), 1)
    bg_values, bg_indices = K.top_k(_random_keys(background, seed), min(batch_size_per_image, n))
    rank = K.arange(min(batch_size_per_image, n), dtype="int32")[None]
    bg_taken = (bg_values >= 0) & (rank < bg_count[:, None])
    # Foreground slots first, then background; keep the first `batch_size_per_image` taken
    # (padding with untaken slots when there are fewer candidates).
    slots = K.concatenate([fg_indices, bg_indices], 1)
    taken = K.concatenate([fg_taken, bg_taken], 1)
    order_key = K.where(taken, -K.arange(int(slots.shape[1]), dtype="float32"), -1e9)
    _, order = K.top_k(order_key, min(batch_size_per_image, int(slots.shape[1])))
    slots = gather_rows(slots, order)
    taken = gather_rows(taken, order)
    missing = batch_size_per_image - int(slots.shape[1])
    if missing > 0:
        slots = K.pad(slots, [[0, 0], [0, missing]])
        taken = K.pad(taken, [[0, 0], [0, missing]])
    return _roi_targets(candidates, slots, taken, foreground, index, gt_boxes, gt_classes, num_fg)


def _roi_targets(candidates, slots, taken, foreground, index, gt_boxes, gt_classes, num_fg):
    rois = K.stop_gradient(gather_rows(candidates, slots))
    matched = gather_rows(index, slots)
    is_fg = gather_rows(foreground, slots) & taken
    labels = gather_rows(gt_classes, matched) + 1
    matched_boxes = gather_rows(gt_boxes, matched)
    deltas = ops.encode_boxes(_nonempty(matched_boxes), _nonempty(rois), ops.BOX_WEIGHTS)
    return RoiTargets(
        rois=rois,
        valid=taken,
        classes=K.where(is_fg, labels, 0),
        deltas=K.where(is_fg[..., None], deltas, 0.0),
        matched=matched,
        num_foreground=num_fg,
    )


def crop_instance_masks(
    instance_masks: Tensor,
    instance_boxes: Tensor,
    rois: Tensor,
    matched: Tensor,
    mask_size: int = 28,
) -> Tensor:
    """Mask targets: each RoI's matched instance mask ROIAligned to ``mask_size`` in the RoI.

    Args:
        instance_masks: ``[b, G, M, M]`` masks in their own boxes' frames.
        instance_boxes: ``[b, G, 4]`` those boxes.
        rois: ``[b, R, 4]``; matched: ``[b, R]`` instance index per RoI.

    Returns:
        ``[b, R, mask_size, mask_size]`` soft targets in ``[0, 1]``.
    """
    rois = K.convert_to_tensor(rois, "float32")  # NumPy's `-` would not take a torch tensor
    m = K.cast(K.shape(instance_masks)[-1], "float32")
    box = _nonempty(gather_rows(instance_boxes, matched))
    scale = m / K.stack([box[..., 2] - box[..., 0], box[..., 3] - box[..., 1]] * 2, -1)
    origin = K.stack([box[..., 0], box[..., 1]] * 2, -1)
    in_mask_frame = (rois - origin) * scale
    return ops.crop_masks(instance_masks, in_mask_frame, matched, mask_size=mask_size)
