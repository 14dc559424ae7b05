"""ROIAlign (He et al., 2017) with half-pixel alignment, on one feature map or on a pyramid.

**Coordinates.** Boxes are ``(y1, x1, y2, x2)`` in image pixels (see
[boxes][lambda_keras.detection.ops.boxes]): an edge at 0 is the image's top or left edge. A
feature map of stride ``s`` (``spatial_scale = 1 / s``) has its cell ``(i, j)`` centred on image
point ``((i + 0.5) s, (j + 0.5) s)``. With ``aligned=True`` (Detectron2's ROIAlignV2,
torchvision's ``aligned=True``) a box is scaled by ``spatial_scale`` and shifted by -0.5 cells, so
that sampling the continuous point ``p`` of the map interpolates between the cells whose centres
surround ``p``; ``aligned=False`` is the original (Mask R-CNN paper) mis-aligned version.

**Sampling.** Each of the ``out_h x out_w`` bins averages ``sampling_ratio x sampling_ratio``
bilinear samples at the centres of a regular sub-grid of the bin. ``sampling_ratio=0`` is
torchvision's adaptive count: a box of ``roi_h x roi_w`` cells takes ``ceil(roi_h / out_h) x
ceil(roi_w / out_w)`` samples per bin. Shapes stay static (XLA, TPU) because the adaptive count
needs a bound, ``max_sampling_ratio``: every box is sampled on a ``max_sampling_ratio`` sub-grid
whose unused samples weigh 0, so the cost is that of ``sampling_ratio=max_sampling_ratio``, and
a box that would need more samples per bin than the bound takes the bound (the result then
differs from torchvision's; choose the bound from the largest box in map cells / output size).
At the map's border a sample within one cell outside the map takes the border value; one
further out counts as 0 (torchvision's and Detectron2's rule).

**Kernels.** The samples' cells and weights are computed once, in ``keras.ops``. On TensorFlow
and JAX the cells are gathered and summed; on eager PyTorch the same weights form a sparse
matrix that multiplies the maps' table
([`roi_align_sparse`][lambda_keras.detection.ops.roi_align_sparse]: faster than torchvision's
``roi_align`` kernel, forward and backward). Both give the same values and gradients (a test
compares them).
"""

from __future__ import annotations

import math

import keras
import numpy as np
from keras import ops

from lambda_keras import _validation as v
from lambda_keras.detection.ops import _checks
from lambda_keras.detection.ops._checks import Tensor
from lambda_keras.detection.ops.sizes import ceil_divide

__all__ = ["assign_pyramid_levels", "multilevel_roi_align", "roi_align"]


def roi_align(
    features: Tensor,
    boxes: Tensor,
    output_size: int | tuple[int, int] = 7,
    spatial_scale: float = 1.0,
    sampling_ratio: int = 2,
    aligned: bool = True,
    max_sampling_ratio: int | None = None,
) -> Tensor:
    """ROIAlign on one feature map.

    Args:
        features: ``[batch, height, width, channels]``.
        boxes: ``[batch, num_boxes, 4]`` in image pixels ``(y1, x1, y2, x2)``.
        output_size: ``out`` or ``(out_h, out_w)``.
        spatial_scale: Map size / image size (``1 / stride``).
        sampling_ratio: Samples per bin along each axis (a positive integer), or 0 for
            torchvision's adaptive count (module docstring).
        aligned: Half-pixel alignment (module docstring).
        max_sampling_ratio: With ``sampling_ratio=0`` (and only then), the most samples per
            bin along each axis (a positive integer; it sets the cost).

    Returns:
        ``[batch, num_boxes, out_h, out_w, channels]``.
    """
    features = _checks.tensor(
        "features", features, 4, "[batch, height, width, channels]", dtype=None
    )
    boxes = _checks.boxes("boxes", boxes, 3, "[batch, num_boxes, 4]")
    _checks.same_sizes("features", features, "boxes", boxes, axes=1)
    if not ops.is_tensor(spatial_scale):
        spatial_scale = v.positive_number("spatial_scale", spatial_scale)
    output_size = _output_size(output_size)
    sampling = _sampling(sampling_ratio, max_sampling_ratio)
    aligned = v.boolean("aligned", aligned)
    shape = ops.shape(features)
    flat = ops.reshape(features, (shape[0], shape[1] * shape[2], shape[3]))
    ones = ops.ones_like(boxes[..., 0], "int32")
    return _roi_align_flat(
        flat,
        boxes * spatial_scale,
        heights=ones * shape[1],
        widths=ones * shape[2],
        offsets=ones * 0,
        output_size=output_size,
        sampling=sampling,
        aligned=aligned,
    )


def assign_pyramid_levels(
    boxes: Tensor,
    min_level: int,
    max_level: int,
    canonical_size: float = 224.0,
    canonical_level: int = 4,
) -> Tensor:
    """The FPN level of each box (Lin et al., 2017, eq. 1).

    ``floor(canonical_level + log2(sqrt(area) / canonical_size))`` clipped to
    ``[min_level, max_level]`` (torchvision adds 1e-6 before the floor; so does this).

    Args:
        boxes: ``[..., 4]`` boxes in image pixels.

    Returns:
        ``[...]`` int32 levels.
    """
    boxes = _checks.boxes("boxes", boxes)
    height = ops.maximum(boxes[..., 2] - boxes[..., 0], 0.0)
    width = ops.maximum(boxes[..., 3] - boxes[..., 1], 0.0)
    size = ops.maximum(ops.sqrt(height * width), 1e-6)
    level = ops.floor(canonical_level + ops.log(size / canonical_size) / math.log(2.0) + 1e-6)
    return ops.cast(ops.clip(level, min_level, max_level), "int32")


def multilevel_roi_align(
    features: dict[str, Tensor],
    boxes: Tensor,
    output_size: int | tuple[int, int] = 7,
    sampling_ratio: int = 2,
    aligned: bool = True,
    canonical_size: float = 224.0,
    canonical_level: int = 4,
    valid_sizes: Tensor | None = None,
    max_sampling_ratio: int | None = None,
) -> Tensor:
    """ROIAlign over a feature pyramid: each box is pooled from the level
    [`assign_pyramid_levels`][lambda_keras.detection.ops.assign_pyramid_levels] gives it.

    Args:
        features: ``{"P<level>": [batch, h_level, w_level, channels]}``, the level-``l`` map of
            stride ``2**l`` (e.g. ``"P2"`` ... ``"P5"``); the same number of channels on each.
        boxes: ``[batch, num_boxes, 4]`` in image pixels.
        valid_sizes: ``[batch, 2]`` int, per image the ``(height, width)`` in pixels of the part
            of the maps that holds its image (the rest is padding of a larger batch): the
            border rule above applies at ``ceil(valid_size / stride)`` cells instead of at the
            maps' edges, so an image gives what it gives alone in a batch of its own size.
        output_size, sampling_ratio, aligned, max_sampling_ratio: As in
            [`roi_align`][lambda_keras.detection.ops.roi_align].

    Returns:
        ``[batch, num_boxes, out_h, out_w, channels]``.
    """
    levels, maps = _pyramid_maps(features)
    boxes = _checks.boxes("boxes", boxes, 3, "[batch, num_boxes, 4]")
    _checks.same_sizes(f"features['P{levels[0]}']", maps[0], "boxes", boxes, axes=1)
    index = (
        assign_pyramid_levels(boxes, levels[0], levels[-1], canonical_size, canonical_level)
        - levels[0]
    )
    sampling = _sampling(sampling_ratio, max_sampling_ratio)
    output_size = _output_size(output_size)
    aligned = v.boolean("aligned", aligned)
    return _multilevel_gathers(
        maps, levels, boxes, index, valid_sizes, output_size, sampling, aligned
    )


def _pyramid_maps(features) -> tuple[list[int], list[Tensor]]:
    """``(levels, maps)``: the pyramid's levels in order and their checked maps, each
    ``[batch, height, width, channels]`` with the same channels."""
    levels = _pyramid_levels(features)
    layout = "[batch, height, width, channels]"
    maps = [
        _checks.tensor(f"features['P{level}']", features[f"P{level}"], 4, layout, dtype=None)
        for level in levels
    ]
    channels = {m.shape[-1] for m in maps}
    if len(channels) > 1:
        received = {key: features[key].shape[-1] for key in sorted(features)}
        raise ValueError(
            "`features` must have the same number of channels on every level (an FPN's "
            f"outputs); received {received}."
        )
    return levels, maps


def _multilevel_gathers(maps, levels, boxes, index, valid_sizes, output_size, sampling, aligned):
    """The ``keras.ops`` path of ``multilevel_roi_align``: every level's map flattened into one
    table that each box samples at its level's offset, size and (with ``valid_sizes``) border."""
    shapes = [ops.shape(m) for m in maps]
    flat = ops.concatenate(
        [ops.reshape(m, (s[0], s[1] * s[2], s[3])) for m, s in zip(maps, shapes, strict=True)], 1
    )
    sizes = _int_vector([s[1] * s[2] for s in shapes])
    offsets = ops.cumsum(sizes) - sizes
    scales = ops.convert_to_tensor([2.0**-level for level in levels], "float32")
    heights = ops.take(_int_vector([s[1] for s in shapes]), index)
    widths = ops.take(_int_vector([s[2] for s in shapes]), index)
    limits = None
    if valid_sizes is not None:
        strides = ops.take(ops.convert_to_tensor([2**level for level in levels], "int32"), index)
        valid = ops.cast(valid_sizes, "int32")[:, None, :]
        limits = (
            ops.minimum(ceil_divide(valid[..., 0], strides), heights),
            ops.minimum(ceil_divide(valid[..., 1], strides), widths),
        )
    return _roi_align_flat(
        flat,
        boxes * ops.take(scales, index)[..., None],
        heights=heights,
        widths=widths,
        limits=limits,
        offsets=ops.take(offsets, index),
        output_size=output_size,
        sampling=sampling,
        aligned=aligned,
    )


def _sparse_kernel(table):
    """The sparse product's module on eager PyTorch
    ([`roi_align_sparse`][lambda_keras.detection.ops.roi_align_sparse]), else None (gathers)."""
    if keras.backend.backend() != "torch":
        return None
    from lambda_keras.detection.ops import roi_align_sparse

    return roi_align_sparse if roi_align_sparse.applies(table) else None


def _sampling(sampling_ratio, max_sampling_ratio) -> tuple[int, bool]:
    """``(samples per bin per axis on the static grid, adaptive)`` from the two arguments."""
    is_int = isinstance(sampling_ratio, (int, np.integer)) and not isinstance(sampling_ratio, bool)
    if not is_int or sampling_ratio < 0:
        raise ValueError(
            "`sampling_ratio` must be a positive integer, or 0 for the adaptive count; received "
            f"sampling_ratio={sampling_ratio!r}."
        )
    if sampling_ratio > 0:
        ratio = int(sampling_ratio)
        if max_sampling_ratio is not None:
            raise ValueError(
                "`max_sampling_ratio` bounds the adaptive count and needs sampling_ratio=0; "
                f"received sampling_ratio={ratio}, max_sampling_ratio={max_sampling_ratio!r}."
            )
        return ratio, False
    if max_sampling_ratio is None:
        raise ValueError(
            "sampling_ratio=0 (torchvision's adaptive ceil(roi / output_size) samples per bin) "
            "needs `max_sampling_ratio`, a positive int bounding the samples per bin per axis so "
            "that shapes stay static; received max_sampling_ratio=None."
        )
    return v.positive_int("max_sampling_ratio", max_sampling_ratio), True


def _int_vector(values) -> Tensor:
    """``[len(values)]`` int32 from Python ints or scalar tensors (sizes known when traced)."""
    return ops.stack([ops.convert_to_tensor(value, "int32") for value in values])


def _pyramid_levels(features) -> list[int]:
    if not isinstance(features, dict) or not features:
        raise TypeError(
            "`features` must be a non-empty dict {'P2': map, 'P3': map, ...}; received "
            f"{type(features).__name__}."
        )
    levels = []
    for key in features:
        if not (isinstance(key, str) and key[:1] == "P" and key[1:].isdigit()):
            raise ValueError(f"`features` keys must be 'P<level>' (e.g. 'P2'); received {key!r}.")
        levels.append(int(key[1:]))
    levels.sort()
    if levels != list(range(levels[0], levels[-1] + 1)):
        raise ValueError(f"`features` must hold consecutive levels; received {sorted(features)}.")
    return levels


def _output_size(output_size) -> tuple[int, int]:
    if isinstance(output_size, (tuple, list)) and len(output_size) == 2:
        return (
            v.positive_int("output_size", output_size[0]),
            v.positive_int("output_size", output_size[1]),
        )
    size = v.positive_int("output_size", output_size)
    return size, size


def _axis_samples(start, end, size, bins: int, sampling: tuple[int, bool], aligned: bool):
    """Per box, the sample positions along one axis, as interpolation indices and weights.

    Args:
        start: ``[b, n]`` box starts in map cells (already scaled).
        end: ``[b, n]`` box ends in map cells.
        size: ``[b, n]`` int32 length of the box's map along this axis.
        sampling: ``(ratio, adaptive)``; adaptive: ``ceil(extent / bins)`` of the ``ratio``
            samples per bin are used, the others weigh 0.

    Returns:
        ``(low, high, w_low, w_high, count)``: the first four ``[b, n, bins * ratio]``, the
        two cells around each sample and their weights (0 for a sample beyond one cell outside
        the map or unused); ``count`` ``[b, n]`` the samples used per bin (``None`` if fixed).
    """
    ratio, adaptive = sampling
    if aligned:
        start, end = start - 0.5, end - 0.5
        extent = end - start
    else:
        extent = ops.maximum(end - start, 1.0)
    sample = ops.arange(ratio, dtype="float32") + 0.5
    bin_index = ops.arange(bins, dtype="float32")
    bin_size = (extent / bins)[..., None, None]
    used = 1.0
    count = None
    if adaptive:  # torchvision: ceil(roi / bins) samples, none for an empty or inverted box
        count = ops.clip(ops.ceil(extent / bins), 0.0, float(ratio))
        used = ops.cast(sample[None, :] < count[..., None, None], "float32")
        offsets = sample / ops.maximum(count, 1.0)[..., None, None]
    else:
        offsets = sample / ratio
    pos = start[..., None, None] + (bin_index[:, None] + offsets) * bin_size  # [b, n, bins, r]
    used = used + ops.zeros_like(pos)
    samples = (ops.shape(start)[0], ops.shape(start)[1], bins * ratio)
    pos, used = ops.reshape(pos, samples), ops.reshape(used, samples)
    limit = ops.cast(size, "float32")[..., None]
    inside = ops.cast(ops.logical_and(pos >= -1.0, pos <= limit), "float32") * used
    pos = ops.minimum(ops.maximum(pos, 0.0), limit - 1.0)
    low = ops.floor(pos)
    frac = pos - low
    low = ops.cast(low, "int32")
    high = ops.minimum(low + 1, size[..., None] - 1)
    return low, high, (1.0 - frac) * inside, frac * inside, count


def _roi_align_flat(
    flat, boxes, *, heights, widths, offsets, output_size, sampling, aligned, limits=None
):
    """ROIAlign where each box samples its own ``heights x widths`` map stored row-major at
    ``offsets`` in ``flat`` ``[batch, positions, channels]``; boxes already in map cells.
    ``limits`` (``(rows, columns)``, each ``[b, n]``, at most the map's) moves the border rule
    to the part of the map that holds the box's image."""
    out_h, out_w = output_size
    ratio = sampling[0]
    limit_h, limit_w = (heights, widths) if limits is None else limits
    y_low, y_high, wy_low, wy_high, count_y = _axis_samples(
        boxes[..., 0], boxes[..., 2], limit_h, out_h, sampling, aligned
    )
    x_low, x_high, wx_low, wx_high, count_x = _axis_samples(
        boxes[..., 1], boxes[..., 3], limit_w, out_w, sampling, aligned
    )
    batch, num_boxes = ops.shape(boxes)[0], ops.shape(boxes)[1]
    positions, channels = ops.shape(flat)[1], ops.shape(flat)[2]
    # One table of the batch's positions: each image's positions follow the previous one's.
    table = ops.reshape(flat, (-1, channels))
    first = ops.arange(batch, dtype="int32")[:, None, None, None] * positions
    base = first + offsets[..., None, None]
    row_stride = widths[..., None, None]
    taps = [  # the four cells of each sample: ([b, n, Sy, Sx] rows of the table, weights)
        (
            base + ys[..., :, None] * row_stride + xs[..., None, :],
            wy[..., :, None] * wx[..., None, :],
        )
        for ys, wy in ((y_low, wy_low), (y_high, wy_high))
        for xs, wx in ((x_low, wx_low), (x_high, wx_high))
    ]
    sparse = _sparse_kernel(table)
    if sparse is not None:
        count = None if count_y is None else count_y * count_x
        return sparse.pool(table, taps, (batch, num_boxes, out_h, out_w), ratio, count)
    sy, sx = out_h * ratio, out_w * ratio
    out = 0.0
    for index, weight in taps:
        values = ops.take(table, ops.reshape(index, (-1,)), axis=0)
        values = ops.reshape(values, (batch, num_boxes, sy, sx, channels))
        out += values * ops.cast(weight, values.dtype)[..., None]
    # Each bin's ratio x ratio samples reduced in tensors of rank 4 at most (LiteRT's XNNPACK
    # delegate refuses a reduction over a rank-7 tensor).
    reduce = ops.mean if count_y is None else ops.sum
    rows = reduce(ops.reshape(out, (-1, ratio, out_w, ratio * channels)), axis=1)
    bins = reduce(ops.reshape(rows, (-1, out_w, ratio, channels)), axis=2)
    bins = ops.reshape(bins, (batch, num_boxes, out_h, out_w, channels))
    if count_y is None:
        return bins
    count = ops.cast(ops.maximum(count_y * count_x, 1.0), bins.dtype)
    return bins / count[..., None, None, None]
