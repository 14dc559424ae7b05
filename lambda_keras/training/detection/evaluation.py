"""COCO evaluation of a Mask R-CNN with pycocotools' ``COCOeval`` (bbox and segm).

Detections are mapped back to each original image (boxes divided by the resize scale and
clipped, masks pasted at the original size and RLE-encoded, labels mapped back to category
ids), written in COCO result format and scored. A model that detects nothing scores 0 on every
metric (``COCOeval`` itself cannot load an empty result list).
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import keras
import numpy as np

from lambda_keras.detection import ops
from lambda_keras.training.detection.datasets.coco import CocoSource, make_dataset

__all__ = ["METRICS", "coco_results", "evaluate"]

METRICS = ("AP", "AP50", "AP75", "AP_S", "AP_M", "AP_L")
"""The names of COCOeval's first six numbers (box or mask), in its order."""


def coco_results(model, source: CocoSource, *, image_size: int, batch_size: int = 8) -> list:
    """The model's detections on every image of ``source``, as COCO result dicts."""
    from pycocotools import mask as mask_utils

    results = []
    data = make_dataset(source, image_size=image_size, global_batch_size=batch_size, training=False)
    for images, info in data:
        # Compiled as `predict` compiles it on the model's backend (op by op on JAX is slow).
        out = {k: np.asarray(t) for k, t in model.predict_on_batch(np.asarray(images)).items()}
        for i in range(len(info["image_id"])):
            height, width = int(info["height"][i]), int(info["width"][i])
            valid = out["valid"][i]
            if not valid.any():
                continue
            boxes = ops.clip_boxes(
                out["boxes"][i][valid] / float(info["scale"][i]), (height, width)
            )
            masks = ops.paste_masks_on_host(out["masks"][i][valid], _numpy(boxes), (height, width))
            coco_boxes = _numpy(ops.to_coco(boxes))
            for box, mask, score, label in zip(
                coco_boxes, masks, out["scores"][i][valid], out["classes"][i][valid], strict=True
            ):
                rle = mask_utils.encode(np.asfortranarray(mask.astype(np.uint8)))
                rle["counts"] = rle["counts"].decode("ascii")
                results.append(
                    {
                        "image_id": int(info["image_id"][i]),
                        "category_id": source.category_ids[int(label)],
                        "bbox": [round(float(c), 2) for c in box],
                        "score": float(score),
                        "segmentation": rle,
                    }
                )
    return results


def _numpy(tensor) -> np.ndarray:
    return np.asarray(keras.ops.convert_to_numpy(tensor))


def evaluate(
    model, source: CocoSource, *, image_size: int, batch_size: int = 8, results_file=None
) -> dict[str, dict[str, float]]:
    """``{"bbox": {"AP": ..., "AP50": ..., ...}, "segm": {...}}`` (AP over IoU .50:.95 etc., in
    [0, 1]); prints COCOeval's tables. ``results_file``: where to write the detections JSON."""
    from pycocotools.cocoeval import COCOeval

    results = coco_results(model, source, image_size=image_size, batch_size=batch_size)
    if results_file is not None:
        Path(results_file).write_text(json.dumps(results))
    scores = {}
    for iou_type in ("bbox", "segm"):
        if not results:
            print(f"{iou_type}: no detections; every metric is 0.")
            scores[iou_type] = dict.fromkeys(METRICS, 0.0)
            continue
        with contextlib.redirect_stdout(io.StringIO()):
            detections = source.coco.loadRes(results)
        evaluator = COCOeval(source.coco, detections, iou_type)
        evaluator.params.imgIds = list(source.image_ids)
        with contextlib.redirect_stdout(io.StringIO()):
            evaluator.evaluate()
            evaluator.accumulate()
        print(f"COCOeval {iou_type}:")
        evaluator.summarize()
        scores[iou_type] = {name: float(evaluator.stats[i]) for i, name in enumerate(METRICS)}
    return scores
