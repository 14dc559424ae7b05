"""Boxes: the convention, pairwise IoU, Faster R-CNN encoding and decoding, clipping.

**Box convention** (keras-hub's ``"yxyx"``): a box is ``(y1, x1, y2, x2)`` in absolute pixel
coordinates of the image it lives on, as float32. Coordinates are continuous: pixel ``(i, j)``
covers ``[i, i + 1) x [j, j + 1)``, its centre is ``(i + 0.5, j + 0.5)``, so a box edge at 0 is
the top (left) edge of the image and the box ``(0, 0, H, W)`` is the whole ``H x W`` image. Size and
area carry no ``+ 1``: ``height = y2 - y1``. COCO's ``[x, y, width, height]`` maps to ``(y, x, y +
height, x + width)`` ([`from_coco`][lambda_keras.detection.ops.boxes.from_coco] /
[`to_coco`][lambda_keras.detection.ops.boxes.to_coco]).
"""

from __future__ import annotations

import math

from keras import ops

from lambda_keras.detection.ops import _checks
from lambda_keras.detection.ops._checks import Tensor

__all__ = [
    "BBOX_DELTA_CLIP",
    "BOX_WEIGHTS",
    "box_area",
    "box_iou",
    "clip_boxes",
    "decode_boxes",
    "encode_boxes",
    "from_coco",
    "to_coco",
]

BOX_WEIGHTS = (10.0, 10.0, 5.0, 5.0)
"""The box coder weights of the second stage (Faster R-CNN's box head, Mask R-CNN's defaults):
deltas scaled by (10, 10, 5, 5) for (y, x, h, w). The RPN encodes with (1, 1, 1, 1)."""

BBOX_DELTA_CLIP = math.log(1000.0 / 16)
"""Largest log-scale a decoded box may grow by (Detectron's log(1000 / 16)): ``exp()`` never
overflows."""


def box_area(boxes: Tensor) -> Tensor:
    """``[..., 4]`` boxes -> ``[...]`` areas (0 for empty or inverted boxes)."""
    boxes = _checks.boxes("boxes", boxes)
    y1, x1, y2, x2 = ops.unstack(boxes, 4, axis=-1)
    return ops.maximum(y2 - y1, 0.0) * ops.maximum(x2 - x1, 0.0)


def box_iou(boxes1: Tensor, boxes2: Tensor) -> Tensor:
    """Pairwise intersection over union.

    Args:
        boxes1: ``[..., n, 4]`` boxes.
        boxes2: ``[..., m, 4]`` boxes (same leading dimensions).

    Returns:
        ``[..., n, m]`` IoU in ``[0, 1]``. A pair whose union is empty (two zero-area boxes)
        has IoU 0, never NaN.
    """
    boxes1 = _checks.boxes("boxes1", boxes1)
    boxes2 = _checks.boxes("boxes2", boxes2)
    a = ops.expand_dims(boxes1, -2)  # [..., n, 1, 4]
    b = ops.expand_dims(boxes2, -3)  # [..., 1, m, 4]
    top = ops.maximum(a[..., 0], b[..., 0])
    left = ops.maximum(a[..., 1], b[..., 1])
    bottom = ops.minimum(a[..., 2], b[..., 2])
    right = ops.minimum(a[..., 3], b[..., 3])
    intersection = ops.maximum(bottom - top, 0.0) * ops.maximum(right - left, 0.0)
    union = box_area(a) + box_area(b) - intersection
    return ops.divide_no_nan(intersection, union)


def _centres_sizes(boxes):
    y1, x1, y2, x2 = ops.unstack(boxes, 4, axis=-1)
    return (y1 + y2) * 0.5, (x1 + x2) * 0.5, y2 - y1, x2 - x1


def encode_boxes(
    boxes: Tensor, anchors: Tensor, weights: tuple[float, float, float, float] = (1, 1, 1, 1)
) -> Tensor:
    """Faster R-CNN regression targets of ``boxes`` relative to ``anchors``.

    ``(dy, dx, dh, dw) = (wy (cy - cy_a) / h_a, wx (cx - cx_a) / w_a, wh log(h / h_a),
    ww log(w / w_a))`` with centres ``c`` and sizes ``h, w`` (no ``+ 1``); Mask R-CNN uses weights
    ``(1, 1, 1, 1)`` for the RPN and ``(10, 10, 5, 5)`` for the box head.

    Args:
        boxes: ``[..., 4]`` boxes of positive size (a zero-size box would encode to ``-inf``).
        anchors: ``[..., 4]`` boxes of positive size, broadcastable against ``boxes``.
        weights: ``(wy, wx, wh, ww)``.

    Returns:
        ``[..., 4]`` deltas ``(dy, dx, dh, dw)``.
    """
    wy, wx, wh, ww = weights
    boxes, anchors = _checks.boxes("boxes", boxes), _checks.boxes("anchors", anchors)
    _checks.broadcastable("boxes", boxes, "anchors", anchors)
    cy, cx, h, w = _centres_sizes(boxes)
    acy, acx, ah, aw = _centres_sizes(anchors)
    return ops.stack(
        [
            wy * (cy - acy) / ah,
            wx * (cx - acx) / aw,
            wh * ops.log(h / ah),
            ww * ops.log(w / aw),
        ],
        axis=-1,
    )


def decode_boxes(
    deltas: Tensor, anchors: Tensor, weights: tuple[float, float, float, float] = (1, 1, 1, 1)
) -> Tensor:
    """The inverse of [`encode_boxes`][lambda_keras.detection.ops.boxes.encode_boxes]: boxes from
    deltas relative to ``anchors``.

    The size deltas are clipped at ``BBOX_DELTA_CLIP`` (``log(1000 / 16)``) before ``exp``, as
    in Detectron and torchvision, so a wild prediction gives a large box, never ``inf``.

    Args:
        deltas: ``[..., 4]`` ``(dy, dx, dh, dw)``.
        anchors: ``[..., 4]`` boxes (broadcastable).
        weights: ``(wy, wx, wh, ww)`` used to encode.

    Returns:
        ``[..., 4]`` boxes ``(y1, x1, y2, x2)``.
    """
    wy, wx, wh, ww = weights
    deltas = _checks.boxes("deltas", deltas, layout="[..., 4] (dy, dx, dh, dw)")
    anchors = _checks.boxes("anchors", anchors)
    _checks.broadcastable("deltas", deltas, "anchors", anchors)
    acy, acx, ah, aw = _centres_sizes(anchors)
    dy, dx, dh, dw = ops.unstack(deltas, 4, axis=-1)
    cy = dy / wy * ah + acy
    cx = dx / wx * aw + acx
    h = ops.exp(ops.minimum(dh / wh, BBOX_DELTA_CLIP)) * ah
    w = ops.exp(ops.minimum(dw / ww, BBOX_DELTA_CLIP)) * aw
    return ops.stack([cy - 0.5 * h, cx - 0.5 * w, cy + 0.5 * h, cx + 0.5 * w], axis=-1)


def clip_boxes(boxes: Tensor, image_shape) -> Tensor:
    """Clip ``[..., 4]`` boxes to ``[0, height] x [0, width]``.

    Args:
        image_shape: ``(height, width)``, or ``[..., 2]`` per image (broadcast against the
            boxes' leading dimensions after adding a box axis, e.g. ``[batch, 1, 2]``).
    """
    boxes = _checks.boxes("boxes", boxes)
    image_shape = ops.cast(image_shape, "float32")
    height, width = image_shape[..., 0], image_shape[..., 1]
    y1, x1, y2, x2 = ops.unstack(boxes, 4, axis=-1)
    return ops.stack(
        [
            ops.minimum(ops.maximum(y1, 0.0), height),
            ops.minimum(ops.maximum(x1, 0.0), width),
            ops.minimum(ops.maximum(y2, 0.0), height),
            ops.minimum(ops.maximum(x2, 0.0), width),
        ],
        axis=-1,
    )


def from_coco(boxes: Tensor) -> Tensor:
    """COCO ``[..., (x, y, width, height)]`` -> ``[..., (y1, x1, y2, x2)]``."""
    boxes = _checks.boxes("boxes", boxes, layout="[..., 4] (x, y, w, h)")
    x, y, w, h = ops.unstack(boxes, 4, axis=-1)
    return ops.stack([y, x, y + h, x + w], axis=-1)


def to_coco(boxes: Tensor) -> Tensor:
    """``[..., (y1, x1, y2, x2)]`` -> COCO ``[..., (x, y, width, height)]``."""
    y1, x1, y2, x2 = ops.unstack(_checks.boxes("boxes", boxes), 4, axis=-1)
    return ops.stack([x1, y1, x2 - x1, y2 - y1], axis=-1)
