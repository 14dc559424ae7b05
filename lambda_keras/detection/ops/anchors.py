"""Anchors of a feature pyramid (Faster R-CNN / FPN), in the box convention of
[`lambda_keras.detection.ops.boxes`][lambda_keras.detection.ops.boxes].

Level ``l`` has stride ``2**l``; its anchors are centred on the centres of its cells,
``((i + 0.5) 2**l, (j + 0.5) 2**l)`` in image pixels (the half-pixel rule ROIAlign uses;
torchvision and Detectron2 centre them on the cells' top-left corners instead). At each cell,
one anchor per aspect ratio ``height / width`` with area ``size**2``. Ordered level by level,
then row-major over the cells, then by aspect ratio: the order in which a head's
``[batch, h, w, num_ratios * k]`` output flattens.
"""

from __future__ import annotations

import math

import numpy as np
from keras import ops

from lambda_keras import _validation as v
from lambda_keras.detection.ops._checks import Tensor
from lambda_keras.detection.ops.sizes import ceil_divide

__all__ = [
    "DEFAULT_ASPECT_RATIOS",
    "DEFAULT_SIZES",
    "anchors_inside",
    "pyramid_anchors",
    "torchvision_anchors",
]

DEFAULT_SIZES = {2: 32.0, 3: 64.0, 4: 128.0, 5: 256.0, 6: 512.0}
"""Anchor side (pixels) per pyramid level P2..P6 (Mask R-CNN with FPN, He et al., 2017)."""
DEFAULT_ASPECT_RATIOS = (0.5, 1.0, 2.0)
"""Anchor aspect ratios (height / width) at every level."""


def pyramid_anchors(
    image_size: tuple[int, int],
    sizes: dict[int, float] | None = None,
    aspect_ratios: tuple[float, ...] = DEFAULT_ASPECT_RATIOS,
) -> dict[str, Tensor]:
    """The anchors of every level for images of ``image_size``.

    Args:
        image_size: ``(height, width)``, multiples of the largest stride.
        sizes: ``{level: anchor side}``; default ``DEFAULT_SIZES`` (P2..P6).
        aspect_ratios: Heights over widths.

    Returns:
        ``{"P<level>": [h_level * w_level * len(aspect_ratios), 4]}`` float32 boxes.
    """
    sizes = DEFAULT_SIZES if sizes is None else sizes
    height = v.positive_int("image_size[0]", image_size[0])
    width = v.positive_int("image_size[1]", image_size[1])
    ratios = [v.positive_number("aspect_ratios", r) for r in aspect_ratios]
    stride = 2 ** max(sizes)
    if height % stride or width % stride:
        raise ValueError(
            f"`image_size` must be a multiple of the largest stride {stride}; received "
            f"image_size={tuple(image_size)}."
        )
    return {
        f"P{level}": _level_anchors(height, width, level, v.positive_number("sizes", size), ratios)
        for level, size in sorted(sizes.items())
    }


def _level_anchors(height: int, width: int, level: int, size: float, ratios) -> Tensor:
    stride = 2**level
    # Half-heights and half-widths of one cell's anchors: area size**2, height / width = ratio.
    half = np.array(
        [[size * math.sqrt(r) / 2, size / math.sqrt(r) / 2] for r in ratios], np.float32
    )  # [A, 2]
    ys = (np.arange(height // stride, dtype=np.float32) + np.float32(0.5)) * np.float32(stride)
    xs = (np.arange(width // stride, dtype=np.float32) + np.float32(0.5)) * np.float32(stride)
    cy, cx = np.meshgrid(ys, xs, indexing="ij")
    centres = np.stack([cy, cx], -1)[:, :, None, :]  # [h, w, 1, 2]
    boxes = np.concatenate([centres - half, centres + half], -1)  # [h, w, A, 4]
    return ops.convert_to_tensor(boxes.reshape(-1, 4))


def torchvision_anchors(
    canvas_size: tuple[int, int],
    padded_sizes: Tensor,
    sizes: dict[int, float] | None = None,
    aspect_ratios: tuple[float, ...] = DEFAULT_ASPECT_RATIOS,
) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    """torchvision's ``AnchorGenerator`` for images padded to ``padded_sizes`` inside a batch
    of ``canvas_size``.

    torchvision's rule, unlike
    [`pyramid_anchors`][lambda_keras.detection.ops.anchors.pyramid_anchors]: a cell's anchors are
    centred on its top-left corner ``(i s, j s)``, their half-sides are rounded to whole pixels, and
    the stride ``s`` of a level is ``padded_size // cells`` (64 for P6 only when the padded side is
    a multiple of 64; 800 pixels give P6 13 cells of stride 61). Each image has its own anchors;
    the cells of the canvas beyond an image's ``ceil(padded_size / 2**level)`` are not valid.

    Args:
        canvas_size: ``(height, width)`` of the batch, multiples of the largest stride.
        padded_sizes: ``[batch, 2]`` int, each image's side padded as torchvision pads it
            (a multiple of 32), at most ``canvas_size``.

    Returns:
        ``(anchors, valid)``: ``{"P<level>": [batch, n_level, 4]}`` float32 boxes in the order of
        [`pyramid_anchors`][lambda_keras.detection.ops.anchors.pyramid_anchors], and ``{"P<level>":
        [batch, n_level]}`` bool.
    """
    sizes = DEFAULT_SIZES if sizes is None else sizes
    height = v.positive_int("canvas_size[0]", canvas_size[0])
    width = v.positive_int("canvas_size[1]", canvas_size[1])
    padded = ops.cast(padded_sizes, "int32")
    batch = ops.shape(padded)[0]
    anchors, valid = {}, {}
    for level, size in sorted(sizes.items()):
        stride = 2**level
        rows, cols = height // stride, width // stride
        cells = ceil_divide(padded, stride)  # [b, 2]
        steps = ops.cast(ops.floor_divide(padded, cells), "float32")  # [b, 2]
        base = ops.convert_to_tensor(_rounded_cell_anchors(size, aspect_ratios))  # [A, 4]
        ys = ops.arange(rows, dtype="float32")[None, :] * steps[:, :1]  # [b, rows]
        xs = ops.arange(cols, dtype="float32")[None, :] * steps[:, 1:]  # [b, cols]
        ys = ops.broadcast_to(ys[:, :, None, None], (batch, rows, cols, 1))
        xs = ops.broadcast_to(xs[:, None, :, None], (batch, rows, cols, 1))
        shifts = ops.concatenate([ys, xs, ys, xs], -1)[:, :, :, None, :]  # [b, rows, cols, 1, 4]
        anchors[f"P{level}"] = ops.reshape(shifts + base, (batch, -1, 4))
        valid[f"P{level}"] = anchors_inside((height, width), padded, level, len(aspect_ratios))
    return anchors, valid


def anchors_inside(
    canvas_size: tuple[int, int], padded_sizes: Tensor, level: int, anchors_per_cell: int
) -> Tensor:
    """``[batch, n_level]`` bool: the anchors of level ``level`` on a canvas of ``canvas_size``
    whose cells lie inside each image's ``padded_sizes`` (``[batch, 2]`` int): the first
    ``ceil(padded_size / 2**level)`` rows and columns, in the anchors' order."""
    stride = 2**level
    rows, cols = canvas_size[0] // stride, canvas_size[1] // stride
    cells = ceil_divide(ops.cast(padded_sizes, "int32"), stride)  # [b, 2]
    inside = ops.logical_and(
        ops.arange(rows)[None, :, None] < cells[:, None, None, 0],
        ops.arange(cols)[None, None, :] < cells[:, None, None, 1],
    )  # [b, rows, cols]
    inside = ops.repeat(inside[..., None], anchors_per_cell, -1)
    return ops.reshape(inside, (ops.shape(inside)[0], -1))


def _rounded_cell_anchors(size: float, aspect_ratios) -> np.ndarray:
    """One cell's anchors ``(y1, x1, y2, x2)`` around 0, torchvision's float32 arithmetic and
    rounding (half to even)."""
    ratios = np.asarray(aspect_ratios, np.float32)
    h_ratios = np.sqrt(ratios)
    w_ratios = np.float32(1) / h_ratios
    hs, ws = h_ratios * np.float32(size), w_ratios * np.float32(size)
    return np.round(np.stack([-hs, -ws, hs, ws], 1) / np.float32(2))
