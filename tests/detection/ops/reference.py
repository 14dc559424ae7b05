"""Loop-by-loop NumPy references written from the definitions (torchvision's C++ ROIAlign, greedy
NMS, Detectron2's grid-sample paste), independent of the vectorised TensorFlow ops."""

import math

import numpy as np


def iou(a, b):
    inter_h = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    inter_w = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = inter_h * inter_w
    area = lambda r: max(0.0, r[2] - r[0]) * max(0.0, r[3] - r[1])  # noqa: E731
    union = area(a) + area(b) - inter
    return inter / union if union > 0 else 0.0


def bilinear(feature, y, x):
    """torchvision roi_align_kernel.cpp's bilinear_interpolate, one channel vector."""
    height, width = feature.shape[:2]
    if y < -1.0 or y > height or x < -1.0 or x > width:
        return np.zeros(feature.shape[2:])
    y, x = max(y, 0.0), max(x, 0.0)
    y_low, x_low = int(y), int(x)
    if y_low >= height - 1:
        y_high = y_low = height - 1
        y = float(y_low)
    else:
        y_high = y_low + 1
    if x_low >= width - 1:
        x_high = x_low = width - 1
        x = float(x_low)
    else:
        x_high = x_low + 1
    ly, lx = y - y_low, x - x_low
    hy, hx = 1.0 - ly, 1.0 - lx
    return (
        hy * hx * feature[y_low, x_low]
        + hy * lx * feature[y_low, x_high]
        + ly * hx * feature[y_high, x_low]
        + ly * lx * feature[y_high, x_high]
    )


def roi_align(feature, box, out, scale, ratio, aligned):
    """One box on one ``[h, w, c]`` map -> ``[out_h, out_w, c]`` (``out`` an int or a pair).

    ``ratio=0`` is torchvision's adaptive count: ``ceil(roi / out)`` samples per bin per axis.
    """
    out_h, out_w = (out, out) if isinstance(out, int) else out
    offset = 0.5 if aligned else 0.0
    y1, x1, y2, x2 = (c * scale - offset for c in box)
    roi_h, roi_w = y2 - y1, x2 - x1
    if not aligned:
        roi_h, roi_w = max(roi_h, 1.0), max(roi_w, 1.0)
    bin_h, bin_w = roi_h / out_h, roi_w / out_w
    grid_h = ratio or max(math.ceil(bin_h), 0)
    grid_w = ratio or max(math.ceil(bin_w), 0)
    result = np.zeros((out_h, out_w, feature.shape[2]))
    for ph in range(out_h):
        for pw in range(out_w):
            total = 0.0
            for iy in range(grid_h):
                y = y1 + ph * bin_h + (iy + 0.5) * bin_h / grid_h
                for ix in range(grid_w):
                    x = x1 + pw * bin_w + (ix + 0.5) * bin_w / grid_w
                    total = total + bilinear(feature, y, x)
            result[ph, pw] = total / max(grid_h * grid_w, 1)
    return result


def clustered_boxes(rng, n, centres=10, extent=100.0, spread=5.0, sides=(10.0, 30.0)):
    """``n`` float32 boxes around ``centres`` random points in ``[0, extent)``: many overlap, so
    suppression decides most of them."""
    points = rng.uniform(0, extent, (centres, 2))[rng.integers(0, centres, n)]
    points = points + rng.normal(0, spread, (n, 2))
    size = rng.uniform(*sides, (n, 2))
    return np.concatenate([points - size / 2, points + size / 2], 1).astype("float32")


def greedy_nms(boxes, scores, threshold, max_out):
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    keep = []
    for i in order:
        if all(iou(boxes[i], boxes[k]) <= threshold for k in keep):
            keep.append(i)
        if len(keep) == max_out:
            break
    return keep


def paste(mask, box, height, width):
    """grid_sample(align_corners=False, zero padding) of ``mask`` over its box, per pixel."""
    m_h, m_w = mask.shape
    y1, x1, y2, x2 = box
    result = np.zeros((height, width))
    padded = np.pad(mask, 1)
    for i in range(height):
        u = (i + 0.5 - y1) / (y2 - y1) * m_h - 0.5 + 1  # +1: the zero border
        for j in range(width):
            t = (j + 0.5 - x1) / (x2 - x1) * m_w - 0.5 + 1
            y0, x0 = int(np.floor(u)), int(np.floor(t))
            value = 0.0
            for yy, wy in ((y0, 1 - (u - y0)), (y0 + 1, u - y0)):
                for xx, wx in ((x0, 1 - (t - x0)), (x0 + 1, t - x0)):
                    if 0 <= yy < m_h + 2 and 0 <= xx < m_w + 2:
                        value += wy * wx * padded[yy, xx]
            result[i, j] = value
    return result
