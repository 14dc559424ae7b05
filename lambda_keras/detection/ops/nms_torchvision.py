""":func:`lambda_keras.detection.ops.nms` on the PyTorch backend where torchvision is installed:
torchvision's ``ops.nms`` kernel, one image at a time, its result padded to the static size the
contract promises (arguments already checked by :func:`~lambda_keras.detection.ops.nms`).

The greedy ``keras.ops`` loop runs eagerly on PyTorch, a dozen small ops per kept box; the
kernel is what torchvision's own detectors call. torchvision is not a dependency: without it,
:func:`~lambda_keras.detection.ops.nms` runs the loop. Imported only on the PyTorch backend.
"""

from __future__ import annotations

import functools
import importlib.util
import math

import torch


@functools.cache  # asked on every NMS call: the answer does not change in a process
def available() -> bool:
    return importlib.util.find_spec("torchvision") is not None


def nms(boxes, scores, max_output_size: int, iou_threshold: float, score_threshold: float):
    """``(indices, valid)`` as :func:`lambda_keras.detection.ops.nms` returns them."""
    import torchvision

    leading, count = tuple(scores.shape[:-1]), scores.shape[-1]
    rows = math.prod(leading)  # not -1 in the reshapes: zero boxes would leave it ambiguous
    flat_boxes = boxes.reshape(rows, count, 4).detach()
    flat_scores = scores.reshape(rows, count).detach()
    indices = torch.zeros((rows, max_output_size), dtype=torch.int32, device=scores.device)
    valid = torch.zeros((rows, max_output_size), dtype=torch.bool, device=scores.device)
    for row in range(rows):
        candidates = torch.nonzero(flat_scores[row] > score_threshold).squeeze(1)
        kept = torchvision.ops.nms(
            _xyxy(flat_boxes[row, candidates]).float(),
            flat_scores[row, candidates].float(),
            iou_threshold,
        )[:max_output_size]
        indices[row, : len(kept)] = candidates[kept].to(torch.int32)
        valid[row, : len(kept)] = True
    return indices.reshape(*leading, max_output_size), valid.reshape(*leading, max_output_size)


def _xyxy(boxes: torch.Tensor) -> torch.Tensor:
    """``(y1, x1, y2, x2)`` -> torchvision's ``(x1, y1, x2, y2)``, an inverted side made empty:
    the contract's inverted box overlaps nothing, and an empty box's IoU with any box is 0 (or
    0 / 0, which is not above a threshold either)."""
    y1, x1, y2, x2 = boxes.unbind(-1)
    return torch.stack([x1, y1, torch.maximum(x2, x1), torch.maximum(y2, y1)], -1)
