"""Instance masks: pasting a box's ``M x M`` mask into the image, and cropping a mask to a box.

**Pasting** ([`paste_masks`][lambda_keras.detection.ops.paste_masks]) follows Detectron2's
``paste_masks_in_image``: the ``M x M`` mask covers its box exactly (mask cell ``k`` spans
``[y1 + k h / M, y1 + (k + 1) h / M)``), each image pixel takes the bilinear interpolation of the
mask at the pixel's centre, with zeros outside the mask (``grid_sample(align_corners=False)``
with zero padding), so the soft mask fades out over half a mask cell beyond the box edge.
Bilinear interpolation is separable: the paste is ``R_y @ mask @ R_x^T`` with per-box
interpolation matrices, no gather. Each has a NumPy form for the host
([`paste_masks_on_host`][lambda_keras.detection.ops.paste_masks_on_host],
[`paste_masks_torchvision_on_host`][lambda_keras.detection.ops.paste_masks_torchvision_on_host]):
the same matrices, each box's product over the pixels its matrices reach only, as torchvision
pastes each mask into its box (``detect``'s last part).

**Cropping** ([`crop_masks`][lambda_keras.detection.ops.masks.crop_masks]): the training target of a
proposal is the ground-truth mask ROIAligned to ``M x M`` in the proposal's box (Mask R-CNN), with
the same half-pixel rule.
"""

from __future__ import annotations

import types

import numpy as np
from keras import ops

from lambda_keras import _validation as v
from lambda_keras.detection.ops import _checks
from lambda_keras.detection.ops._checks import Tensor
from lambda_keras.detection.ops.roi_pooling import _roi_align_flat

__all__ = [
    "crop_masks",
    "paste_masks",
    "paste_masks_on_host",
    "paste_masks_torchvision",
    "paste_masks_torchvision_on_host",
]

_HOST = types.SimpleNamespace(
    **{name: getattr(np, name) for name in (
        "abs", "arange", "floor", "logical_and", "maximum", "minimum", "where"
    )},
    cast=lambda x, dtype: np.asarray(x).astype(dtype),
    # as keras.ops.one_hot: a row of zeros for an index out of range
    one_hot=lambda x, num_classes: (x[..., None] == np.arange(num_classes)).astype("float32"),
)
"""The ``keras.ops`` functions the interpolation matrices use, on NumPy arrays: the matrices'
one rule, computed on the host."""


def _interpolation_matrix(start, end, image_size, mask_size: int, xp=ops) -> Tensor:
    """``[n, image_size, mask_size]``: weight of mask cell ``k`` at image pixel ``i`` along one
    axis, for boxes spanning ``[start, end)`` (``[n]``) along it (``xp``: ``keras.ops``, or
    ``_HOST`` for NumPy arrays)."""
    centres = xp.arange(image_size, dtype="float32") + 0.5  # [I]
    extent = (end - start)[:, None]
    # The pixel centre in mask cells, where cell k's centre is at k.
    pos = (centres[None, :] - start[:, None]) / xp.where(extent > 0, extent, 1.0) * mask_size - 0.5
    cells = xp.arange(mask_size, dtype="float32")
    weights = xp.maximum(1.0 - xp.abs(pos[:, :, None] - cells[None, None, :]), 0.0)
    return xp.where(extent[:, :, None] > 0, weights, 0.0)


def _transposed(matrices: Tensor) -> Tensor:
    """``[..., a, b]`` -> ``[..., b, a]``."""
    return ops.swapaxes(matrices, -1, -2)


def paste_masks(
    masks: Tensor, boxes: Tensor, image_shape: tuple[int, int], threshold: float | None = 0.5
) -> Tensor:
    """Paste per-box masks into the image.

    Args:
        masks: ``[n, M, M]`` (or ``[n, M_h, M_w]``) mask probabilities in box coordinates.
        boxes: ``[n, 4]`` boxes ``(y1, x1, y2, x2)`` in image pixels.
        image_shape: ``(height, width)`` of the image (Python ints, or an int32 tensor).
        threshold: Pixels with probability ``>= threshold`` are True; None returns the
            interpolated probabilities.

    Returns:
        ``[n, height, width]``: bool masks, or float32 probabilities with ``threshold=None``.
        A box of zero height or width pastes an empty mask.
    """
    height, width = image_shape[0], image_shape[1]
    if not ops.is_tensor(image_shape):
        height = v.positive_int("image_shape[0]", height)
        width = v.positive_int("image_shape[1]", width)
    masks = _checks.tensor("masks", masks, 3, "[n, M, M]")
    boxes = _checks.boxes("boxes", boxes, 2, "[n, 4]")
    _checks.same_sizes("masks", masks, "boxes", boxes, axes=1)
    rows = _interpolation_matrix(boxes[:, 0], boxes[:, 2], height, masks.shape[1])
    cols = _interpolation_matrix(boxes[:, 1], boxes[:, 3], width, masks.shape[2])
    pasted = ops.matmul(ops.matmul(rows, masks), _transposed(cols))
    return pasted if threshold is None else pasted >= threshold


def paste_masks_torchvision(masks: Tensor, boxes: Tensor, image_shape: tuple[int, int]) -> Tensor:
    """Paste per-box masks into the image by torchvision's rule (``paste_masks_in_image``), for
    models converted from torchvision.

    The ``M x M`` mask is padded with one row and column of zeros on each side, its box grown
    by ``(M + 2) / M`` about its centre and truncated to whole pixels ``b0 .. b1`` (both
    included), and the padded mask resized bilinearly (``align_corners=False``) to those
    ``b1 - b0 + 1`` pixels.

    Args:
        masks: ``[n, M, M]`` mask probabilities; boxes: ``[n, 4]`` ``(y1, x1, y2, x2)`` pixels.
        image_shape: ``(height, width)`` of the image (ints or an int32 tensor).

    Returns:
        ``[n, height, width]`` float32 probabilities (threshold at 0.5 for binary masks).
    """
    masks = _checks.tensor("masks", masks, 3, "[n, M, M]")
    boxes = _checks.boxes("boxes", boxes, 2, "[n, 4]")
    _checks.same_sizes("masks", masks, "boxes", boxes, axes=1)
    padded = ops.pad(masks, [[0, 0], [1, 1], [1, 1]])
    rows = _torchvision_matrix(boxes[:, 0], boxes[:, 2], image_shape[0], masks.shape[1])
    cols = _torchvision_matrix(boxes[:, 1], boxes[:, 3], image_shape[1], masks.shape[2])
    return ops.matmul(ops.matmul(rows, padded), _transposed(cols))


def _torchvision_matrix(start, end, image_size, mask_size: int, xp=ops) -> Tensor:
    """``[n, image_size, mask_size + 2]``: torchvision's paste weights along one axis (``xp``
    as in ``_interpolation_matrix``)."""
    size = mask_size + 2
    centre, half = (start + end) * 0.5, (end - start) * 0.5 * (size / mask_size)
    first = xp.cast(centre - half, "int32")  # truncation toward zero, as torch's .to(int64)
    extent = xp.maximum(xp.cast(centre + half, "int32") - first + 1, 1)
    offset = xp.arange(image_size, dtype="int32")[None, :] - first[:, None]  # [n, I]
    inside = xp.logical_and(offset >= 0, offset < extent[:, None])
    scale = float(size) / xp.cast(extent, "float32")[:, None]
    src = xp.maximum((xp.cast(offset, "float32") + 0.5) * scale - 0.5, 0.0)
    low = xp.floor(src)
    frac = src - low
    # Clipped: pixels outside the box (masked below) would index past the padded mask.
    low = xp.minimum(xp.cast(low, "int32"), size - 1)
    high = xp.minimum(low + 1, size - 1)
    weights = (
        xp.one_hot(low, size) * (1.0 - frac)[..., None] + xp.one_hot(high, size) * frac[..., None]
    )
    return xp.where(inside[..., None], weights, 0.0)


def paste_masks_on_host(
    masks: np.ndarray,
    boxes: np.ndarray,
    image_shape: tuple[int, int],
    keep: np.ndarray | None = None,
    threshold: float = 0.5,
) -> np.ndarray:
    """[`paste_masks`][lambda_keras.detection.ops.paste_masks]'s bool masks, computed
    with NumPy box by box over the pixels each box's mask reaches (not the whole image per
    box): for a photo's detections on the host.

    Args:
        masks: ``[n, M, M]`` mask probabilities; boxes: ``[n, 4]`` ``(y1, x1, y2, x2)`` pixels.
        image_shape: ``(height, width)`` ints.
        keep: ``[n]`` bool, the masks to paste (the others stay empty); None pastes all. A
            box with a coordinate that is not finite pastes nothing.
        threshold: Pixels with probability ``>= threshold`` are True; positive (a pixel no
            box reaches is False).

    Returns:
        ``[n, height, width]`` bool.

    Examples:
        >>> import numpy as np
        >>> from lambda_keras.detection import ops
        >>> box = np.array([[1.0, 2.0, 3.0, 5.0]])  # rows 1 and 2, columns 2 to 4
        >>> ops.paste_masks_on_host(np.ones((1, 4, 4)), box, (4, 6))[0].astype(int)
        array([[0, 0, 0, 0, 0, 0],
               [0, 0, 1, 1, 1, 0],
               [0, 0, 1, 1, 1, 0],
               [0, 0, 0, 0, 0, 0]])
    """
    return _paste_on_host(masks, boxes, image_shape, keep, threshold, _interpolation_matrix, 0)


def paste_masks_torchvision_on_host(
    masks: np.ndarray,
    boxes: np.ndarray,
    image_shape: tuple[int, int],
    keep: np.ndarray | None = None,
    threshold: float = 0.5,
) -> np.ndarray:
    """[`paste_masks_torchvision`][lambda_keras.detection.ops.paste_masks_torchvision]
    thresholded, computed as
    [`paste_masks_on_host`][lambda_keras.detection.ops.paste_masks_on_host] computes
    ``paste_masks`` (the same arguments): torchvision's rule, bool ``[n, height, width]``."""
    return _paste_on_host(masks, boxes, image_shape, keep, threshold, _torchvision_matrix, 1)


def _paste_on_host(masks, boxes, image_shape, keep, threshold, matrix, pad: int) -> np.ndarray:
    """Both host pastes: ``matrix`` the rule's interpolation matrices along one axis, for the
    masks padded with ``pad`` zeros on each side."""
    masks, boxes, (height, width), kept = _host_arguments(
        masks, boxes, image_shape, keep, threshold
    )
    pasted = np.zeros((len(boxes), height, width), bool)
    boxes = boxes[kept]
    with np.errstate(invalid="ignore"):  # a box too far for int32 pixels: no weight there
        rows = matrix(boxes[:, 0], boxes[:, 2], height, masks.shape[1], _HOST)
        cols = matrix(boxes[:, 1], boxes[:, 3], width, masks.shape[2], _HOST)
    masks = np.pad(masks[kept], [[0, 0], [pad, pad], [pad, pad]])
    for i, ((r0, r1), (c0, c1)) in enumerate(
        zip(_weighted_span(rows), _weighted_span(cols), strict=True)
    ):  # outside its span a box's product is 0, below any positive threshold
        if r0 < r1 and c0 < c1:
            product = rows[i, r0:r1] @ masks[i] @ cols[i, c0:c1].T
            pasted[kept[i], r0:r1, c0:c1] = product >= threshold
    return pasted


def _host_arguments(
    masks, boxes, image_shape, keep, threshold: float
) -> tuple[np.ndarray, np.ndarray, tuple[int, int], np.ndarray]:
    """``(masks, boxes, (height, width), kept)``: the host pastes' arguments checked as the
    ``keras.ops`` pastes check theirs, as float32 NumPy arrays and ints, and the indices of the
    kept boxes with finite coordinates; ``threshold`` positive."""
    v.positive_number("threshold", threshold)
    height = v.positive_int("image_shape[0]", image_shape[0])
    width = v.positive_int("image_shape[1]", image_shape[1])
    masks = _checks.tensor("masks", masks, 3, "[n, M, M]", on_host=True)
    boxes = _checks.boxes("boxes", boxes, 2, "[n, 4]", on_host=True)
    _checks.same_sizes("masks", masks, "boxes", boxes, axes=1)
    finite = np.isfinite(boxes).all(axis=1)
    if keep is None:
        return masks, boxes, (height, width), np.flatnonzero(finite)
    keep = _checks.tensor("keep", keep, 1, "[n]", dtype="bool", on_host=True)
    _checks.same_sizes("keep", keep, "boxes", boxes, axes=1)
    return masks, boxes, (height, width), np.flatnonzero(keep & finite)


def _weighted_span(matrices: np.ndarray) -> np.ndarray:
    """``[n, 2]``: the first and one past the last pixel of each ``[pixels, cells]`` matrix
    with a nonzero weight (``(0, 0)`` where none has)."""
    weighted = (matrices != 0).any(axis=2)  # [n, pixels]
    first = np.argmax(weighted, axis=1)
    end = weighted.shape[1] - np.argmax(weighted[:, ::-1], axis=1)
    return np.where(weighted.any(axis=1)[:, None], np.stack([first, end], axis=1), 0)


def crop_masks(
    masks: Tensor,
    boxes: Tensor,
    mask_indices: Tensor,
    mask_size: int = 28,
    sampling_ratio: int = 2,
) -> Tensor:
    """ROIAlign of each box's own full-image mask to ``mask_size x mask_size`` inside the box.

    Args:
        masks: ``[batch, num_masks, height, width]`` image masks in ``[0, 1]`` (0/1 or soft).
        boxes: ``[batch, num_boxes, 4]`` boxes in image pixels.
        mask_indices: ``[batch, num_boxes]`` int, which of the image's masks each box crops.
        sampling_ratio: Bilinear samples per output cell along each axis.

    Returns:
        ``[batch, num_boxes, mask_size, mask_size]`` float32, in ``[0, 1]`` for masks in
        ``[0, 1]``: each cell is a weighted mean of mask values, and the weights' float rounding
        (PyTorch's sparse product gave ``1.0000001`` for a mask of ones) is moved back onto
        ``[0, 1]``, so a crop passes
        [`check_targets`][lambda_keras.detection.target_checks.check_targets]. Values further out
        (a 0/255 mask) are kept as they come, for that check to refuse.
    """
    masks = _checks.tensor("masks", masks, 4, "[batch, num_masks, height, width]")
    boxes = _checks.boxes("boxes", boxes, 3, "[batch, num_boxes, 4]")
    mask_indices = _checks.tensor("mask_indices", mask_indices, 2, "[batch, num_boxes]", None)
    _checks.same_sizes("boxes", boxes, "mask_indices", mask_indices, axes=2)
    _checks.same_sizes("masks", masks, "boxes", boxes, axes=1)
    shape = ops.shape(masks)
    flat = ops.reshape(masks, (shape[0], shape[1] * shape[2] * shape[3], 1))
    mask_indices = ops.cast(mask_indices, "int32")
    ones = ops.ones_like(mask_indices)
    size = v.positive_int("mask_size", mask_size)
    crops = _roi_align_flat(
        flat,
        boxes,
        heights=ones * shape[2],
        widths=ones * shape[3],
        offsets=mask_indices * shape[2] * shape[3],
        output_size=(size, size),
        sampling=(v.positive_int("sampling_ratio", sampling_ratio), False),
        aligned=True,
    )
    return _snap_rounding(crops[..., 0])


# How far outside [0, 1] a crop of a mask in [0, 1] may land by float rounding alone (PyTorch's
# sparse product: 1.0000002 seen).
_ROUNDING = 1e-5


def _snap_rounding(crops: Tensor) -> Tensor:
    """Crops within ``_ROUNDING`` of ``[0, 1]`` moved onto it; a value further out (a 0/255
    mask, NaN) stays, for the target rule to refuse."""
    inside = ops.clip(crops, 0.0, 1.0)
    return ops.where(ops.abs(crops - inside) <= _ROUNDING, inside, crops)
