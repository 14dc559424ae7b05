"""[nms][lambda_keras.detection.ops.nms] on the PyTorch backend where torchvision is installed:
torchvision's ``ops.nms`` kernel, one image at a time, its result padded to the static size the
contract promises (the boxes already ranked, finite and checked by ``nms``).

The greedy ``keras.ops`` loop runs eagerly on PyTorch, a dozen small ops per kept box; the
kernel is what torchvision's own detectors call. torchvision is not a dependency: without it,
[`nms`][lambda_keras.detection.ops.nms] runs the loop (which a compiled step cannot trace: its
number of iterations depends on the boxes). Imported only on the PyTorch backend.
"""

from __future__ import annotations

import functools
import importlib.util

import torch


@functools.cache  # asked on every NMS call: the answer does not change in a process
def available() -> bool:
    """Whether torchvision is installed (its kernel is used only then)."""
    return importlib.util.find_spec("torchvision") is not None


def suppress(boxes, alive, max_output_size: int, iou_threshold: float):
    """``(positions, valid)`` ``[B, max_output_size]`` of the boxes ``[B, n, 4]`` that the
    contract keeps, given in its order with ``alive`` ``[B, n]`` (see ``nms._run``).

    One operator of PyTorch's (``lambda_keras::padded_nms``) whose results have that static
    shape whatever the boxes: a compiled step's trace holds it as one node and calls the
    kernel when it runs, where the kernel's own variable-length result cannot be traced. It
    reads each image's kept count on the host (``torch.nonzero``), which no CUDA graph can
    record: it carries PyTorch's ``cudagraph_unsafe`` tag, with which Inductor's CUDA graphs
    (``reduce-overhead``) are to record the step's kernels before and after it and call it
    between their replays (Inductor's graph partitions; not yet run on a GPU)."""
    return torch.ops.lambda_keras.padded_nms(
        boxes.detach(), alive, int(max_output_size), float(iou_threshold)
    )


@torch.library.custom_op(
    "lambda_keras::padded_nms", mutates_args=(), tags=(torch.Tag.cudagraph_unsafe,)
)
def _padded_nms(
    boxes: torch.Tensor, alive: torch.Tensor, max_output_size: int, iou_threshold: float
) -> tuple[torch.Tensor, torch.Tensor]:
    import torchvision

    rows, count = alive.shape
    boxes = _xyxy(boxes).float()
    # The kernel sorts by score: distinct decreasing scores keep the order the boxes come in.
    ranks = -torch.arange(count, dtype=torch.float32, device=boxes.device)
    positions = torch.zeros((rows, max_output_size), dtype=torch.int32, device=boxes.device)
    valid = torch.zeros((rows, max_output_size), dtype=torch.bool, device=boxes.device)
    for row in range(rows):
        candidates = torch.nonzero(alive[row]).squeeze(1)
        kept = torchvision.ops.nms(boxes[row, candidates], ranks[candidates], iou_threshold)
        kept = kept[:max_output_size]
        positions[row, : len(kept)] = candidates[kept].to(torch.int32)
        valid[row, : len(kept)] = True
    return positions, valid


@_padded_nms.register_fake
def _padded_nms_shapes(boxes, alive, max_output_size, iou_threshold):
    rows = alive.shape[0]
    return (
        boxes.new_empty((rows, max_output_size), dtype=torch.int32),
        boxes.new_empty((rows, max_output_size), dtype=torch.bool),
    )


def _xyxy(boxes: torch.Tensor) -> torch.Tensor:
    """``(y1, x1, y2, x2)`` -> torchvision's ``(x1, y1, x2, y2)``, an inverted side made empty:
    the contract's inverted box overlaps nothing, and an empty box's IoU with any box is 0 (or
    0 / 0, which is not above a threshold either)."""
    y1, x1, y2, x2 = boxes.unbind(-1)
    return torch.stack([x1, y1, torch.maximum(x2, x1), torch.maximum(y2, y1)], -1)
