"""The embedded detection data set: coloured shapes with instance masks, written as real COCO
(an annotations JSON and a folder of PNG files), so the whole path runs offline.

Each image has 1-4 non-overlapping shapes on a noisy background: rectangles and triangles with
polygon segmentations, ellipses with RLE segmentations (both COCO formats). The category ids
are COCO-like, not contiguous (1 rectangle, 3 ellipse, 7 triangle), so the label mapping is
exercised too. Generated from a seed: the same files every time.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import tensorflow as tf

from lambda_keras import _validation as v

__all__ = ["CATEGORIES", "write_shapes_dataset"]

CATEGORIES = (
    {"id": 1, "name": "rectangle"},
    {"id": 3, "name": "ellipse"},
    {"id": 7, "name": "triangle"},
)
"""The synthetic data set's COCO categories (ids with gaps, as COCO's have)."""


def write_shapes_dataset(
    folder: str | Path,
    num_train: int = 300,
    num_val: int = 60,
    image_size: int = 128,
    seed: int = 0,
) -> dict[str, Path]:
    """Write ``train`` and ``val`` splits under ``folder``; existing complete splits are kept.

    Returns:
        ``{"train_annotations", "train_images", "val_annotations", "val_images"}`` paths.
    """
    from pycocotools import mask as mask_utils  # the [detection] extra

    folder = Path(folder)
    image_size = v.positive_int("image_size", image_size)
    if image_size < 48:
        raise ValueError(f"`image_size` must be at least 48; received image_size={image_size}.")
    paths = {}
    for offset, (split, count) in enumerate((("train", num_train), ("val", num_val))):
        count = v.positive_int(f"num_{split}", count)
        images, annotations = folder / split, folder / f"{split}.json"
        paths[f"{split}_annotations"], paths[f"{split}_images"] = annotations, images
        if annotations.exists():
            existing = json.loads(annotations.read_text())
            if len(existing["images"]) == count and existing.get("info", {}).get("seed") == seed:
                continue
        images.mkdir(parents=True, exist_ok=True)
        rng = np.random.default_rng([seed, offset])
        coco = {
            "info": {"description": "lambda_keras shapes", "seed": seed},
            "images": [],
            "annotations": [],
            "categories": list(CATEGORIES),
        }
        for index in range(count):
            _write_image(coco, images, index + 1, image_size, rng, mask_utils)
        tmp = annotations.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(coco))
        tmp.replace(annotations)
    return paths


def _write_image(coco, folder: Path, image_id: int, size: int, rng, mask_utils) -> None:
    pixels = rng.integers(0, 60, (size, size, 3)).astype(np.uint8)
    taken = np.zeros((size, size), bool)
    for _ in range(rng.integers(1, 5)):
        shape = _place_shape(rng, size, taken, mask_utils)
        if shape is None:
            continue
        category, mask, segmentation = shape
        taken |= mask
        pixels[mask] = rng.integers(90, 256, 3)
        rle = mask_utils.encode(np.asfortranarray(mask.astype(np.uint8)))
        coco["annotations"].append(
            {
                "id": len(coco["annotations"]) + 1,
                "image_id": image_id,
                "category_id": category,
                "segmentation": segmentation,
                "area": float(mask_utils.area(rle)),
                "bbox": [float(c) for c in mask_utils.toBbox(rle)],
                "iscrowd": 0,
            }
        )
    name = f"{image_id:06d}.png"
    tf.io.write_file(str(folder / name), tf.io.encode_png(pixels))
    coco["images"].append({"id": image_id, "file_name": name, "height": size, "width": size})


def _place_shape(rng, size: int, taken, mask_utils):
    """A random shape that does not touch the ones already drawn (None after 20 tries)."""
    for _ in range(20):
        h, w = rng.integers(size // 8, size // 2, 2)
        y, x = rng.integers(0, size - h), rng.integers(0, size - w)
        category = int(rng.choice([c["id"] for c in CATEGORIES]))
        if category == 3:
            yy, xx = np.mgrid[:size, :size] + 0.5
            mask = ((yy - y - h / 2) / (h / 2)) ** 2 + ((xx - x - w / 2) / (w / 2)) ** 2 <= 1
            rle = mask_utils.encode(np.asfortranarray(mask.astype(np.uint8)))
            segmentation = {"size": rle["size"], "counts": rle["counts"].decode("ascii")}
        else:
            if category == 1:
                polygon = [x, y, x + w, y, x + w, y + h, x, y + h]
            else:
                polygon = [x + w / 2, y, x + w, y + h, x, y + h]
            polygon = [float(c) for c in polygon]
            rles = mask_utils.frPyObjects([polygon], size, size)
            mask = mask_utils.decode(mask_utils.merge(rles)).astype(bool)
            segmentation = [polygon]
        grown = np.zeros_like(taken)
        grown[max(y - 2, 0) : y + h + 2, max(x - 2, 0) : x + w + 2] = True
        if mask.sum() >= 16 and not (grown & taken).any():
            return category, mask, segmentation
    return None
