"""[roi_align][lambda_keras.detection.ops.roi_align] and
[multilevel_roi_align][lambda_keras.detection.ops.multilevel_roi_align] on the PyTorch backend
where torchvision is installed: torchvision's ``ops.roi_align`` kernel (one call for a map; for
a pyramid, one call per image and level on the part of the level's map that holds the image),
its results put back in the boxes' order (the static ``[batch, num_boxes, ...]`` the ops
promise).

The ``keras.ops`` path gathers every sample of every box (four ``take`` calls over the whole
batch): eager on PyTorch, it is the slower path there, where torchvision's own detectors call
this kernel. Used for a fixed ``sampling_ratio`` only (the adaptive count is bounded by
``max_sampling_ratio`` on the ``keras.ops`` path, which the kernel has no notion of). Cropping
each map to ``ceil(valid_size / stride)`` cells puts the kernel's border rule where the
``keras.ops`` path puts it. torchvision is not a dependency; imported on PyTorch only.
"""

from __future__ import annotations

import functools
import importlib.util

import torch

__all__ = ["available", "multilevel_roi_align", "roi_align"]


@functools.cache  # asked on every call: the answer does not change in a process
def available() -> bool:
    """Whether torchvision is installed (its kernel is used only then)."""
    return importlib.util.find_spec("torchvision") is not None


def roi_align(
    features: torch.Tensor,
    boxes: torch.Tensor,
    output_size: tuple[int, int],
    spatial_scale: float,
    sampling_ratio: int,
    aligned: bool,
) -> torch.Tensor:
    """``[b, n, out_h, out_w, c]`` pooled from ``features`` ``[b, h, w, c]`` for ``boxes``
    ``[b, n, 4]`` (image pixels, ``(y1, x1, y2, x2)``), as ``roi_align``."""
    import torchvision

    batch, count = boxes.shape[0], boxes.shape[1]
    index = torch.arange(batch, device=boxes.device, dtype=torch.float32).repeat_interleave(count)
    rois = torch.cat([index[:, None], boxes.reshape(-1, 4)[:, [1, 0, 3, 2]].float()], 1)
    pooled = torchvision.ops.roi_align(
        features.permute(0, 3, 1, 2).float().contiguous(),
        rois,
        output_size,
        spatial_scale=float(spatial_scale),
        sampling_ratio=sampling_ratio,
        aligned=aligned,
    )
    pooled = pooled.permute(0, 2, 3, 1).reshape(batch, count, *output_size, features.shape[-1])
    return pooled.to(features.dtype)


def multilevel_roi_align(
    maps: list[torch.Tensor],
    levels: list[int],
    boxes: torch.Tensor,
    level_index: torch.Tensor,
    valid_sizes: torch.Tensor | None,
    output_size: tuple[int, int],
    sampling_ratio: int,
    aligned: bool,
) -> torch.Tensor:
    """``[b, n, out_h, out_w, c]`` pooled from ``maps`` (``[b, h_l, w_l, c]`` per level of
    ``levels``) for ``boxes`` ``[b, n, 4]`` (image pixels, ``(y1, x1, y2, x2)``), each box from
    the level ``level_index`` ``[b, n]`` (0-based) gives it; ``valid_sizes`` ``[b, 2]`` or None
    as in ``multilevel_roi_align``."""
    import torchvision

    batch, count = boxes.shape[0], boxes.shape[1]
    channels = maps[0].shape[-1]
    out = torch.zeros(
        (batch, count, *output_size, channels), dtype=maps[0].dtype, device=boxes.device
    )
    xyxy = boxes[..., [1, 0, 3, 2]].float()
    for position, (level, fmap) in enumerate(zip(levels, maps, strict=True)):
        stride = 2**level
        for image in range(batch):
            chosen = torch.nonzero(level_index[image] == position).squeeze(1)
            if chosen.numel() == 0:
                continue
            rows, cols = fmap.shape[1], fmap.shape[2]
            if valid_sizes is not None:
                rows = min(rows, -(-int(valid_sizes[image, 0]) // stride))
                cols = min(cols, -(-int(valid_sizes[image, 1]) // stride))
            part = fmap[image : image + 1, :rows, :cols].permute(0, 3, 1, 2).float()
            rois = torch.cat([torch.zeros_like(xyxy[image, chosen, :1]), xyxy[image, chosen]], 1)
            pooled = torchvision.ops.roi_align(
                part.contiguous(),
                rois,
                output_size,
                spatial_scale=1.0 / stride,
                sampling_ratio=sampling_ratio,
                aligned=aligned,
            )
            out[image, chosen] = pooled.permute(0, 2, 3, 1).to(out.dtype)
    return out
