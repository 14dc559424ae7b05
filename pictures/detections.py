"""Detections drawn on images, for docs/images/detections.png.

The model is the one the documented command trains (``python scripts/train_maskrcnn.py``:
a Mask R-CNN on a LambdaResNet-50 backbone, on the generated shapes data); the images are the
first ``--count`` validation images of that data, which the model did not train on. Left of
each pair the ground truth, right the detections above ``--threshold`` from
:func:`lambda_keras.detection.detect` (boxes, masks pasted into the image, class names from the
run's ``labels.json``).

    python scripts/train_maskrcnn.py
    python pictures/detections.py [--model_dir=runs/maskrcnn] [--shapes_dir=runs/shapes_data]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib
import numpy as np

matplotlib.use("Agg")
from matplotlib.patches import Rectangle  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
COLOURS = np.array([[0.9, 0.2, 0.2], [0.2, 0.7, 0.2], [0.2, 0.4, 0.9], [0.9, 0.7, 0.1]])


def draw(axis, image, boxes, masks, names, title: str) -> None:
    shown = image.astype("float32") / 255.0
    for k, mask in enumerate(masks):
        colour = COLOURS[k % len(COLOURS)]
        shown = np.where(mask[..., None] > 0, 0.5 * shown + 0.5 * colour, shown)
    axis.imshow(shown)
    for k, ((y1, x1, y2, x2), name) in enumerate(zip(boxes, names, strict=True)):
        colour = COLOURS[k % len(COLOURS)]
        axis.add_patch(
            Rectangle((x1, y1), x2 - x1, y2 - y1, fill=False, edgecolor=colour, linewidth=1.5)
        )
        axis.text(x1, y1, name, color="white", fontsize=7, backgroundcolor=colour)
    axis.set_title(title, fontsize=9)
    axis.axis("off")


def ground_truth(coco, image_id: int):
    """``(boxes yxyx, masks, names)`` of one image of a pycocotools ``COCO``."""
    anns = coco.loadAnns(coco.getAnnIds(imgIds=image_id, iscrowd=False))
    boxes = [
        (a["bbox"][1], a["bbox"][0], a["bbox"][1] + a["bbox"][3], a["bbox"][0] + a["bbox"][2])
        for a in anns
    ]
    masks = [coco.annToMask(a) for a in anns]
    names = [coco.loadCats(a["category_id"])[0]["name"] for a in anns]
    return boxes, masks, names


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model_dir", default="runs/maskrcnn")
    parser.add_argument("--shapes_dir", default="runs/shapes_data")
    parser.add_argument("--count", type=int, default=3)
    parser.add_argument("--threshold", type=float, default=0.5)
    parser.add_argument("--image_size", type=int, default=128, help="the run's --image_size")
    parser.add_argument("--output", default=str(ROOT / "docs" / "images" / "detections.png"))
    args = parser.parse_args(argv)

    import keras
    import matplotlib.pyplot as plt
    from PIL import Image
    from pycocotools.coco import COCO

    from lambda_keras.detection import detect

    model = keras.saving.load_model(Path(args.model_dir) / "model.keras")
    names = json.loads((Path(args.model_dir) / "labels.json").read_text())["class_names"]
    coco = COCO(str(Path(args.shapes_dir) / "val.json"))
    image_ids = sorted(coco.getImgIds())[: args.count]
    figure, axes = plt.subplots(len(image_ids), 2, figsize=(6, 3 * len(image_ids)), squeeze=False)
    for row, image_id in zip(axes, image_ids, strict=True):
        info = coco.loadImgs(image_id)[0]
        image = np.asarray(
            Image.open(Path(args.shapes_dir) / "val" / info["file_name"]).convert("RGB")
        )
        draw(row[0], image, *ground_truth(coco, image_id), "ground truth")
        found = detect(model, image, image_size=args.image_size)
        keep = np.flatnonzero(found["scores"][: int(found["num_detections"])] > args.threshold)
        labels = [f"{names[found['classes'][k]]} {found['scores'][k]:.2f}" for k in keep]
        draw(row[1], image, found["boxes"][keep], found["masks"][keep], labels, "detections")
    figure.tight_layout()
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(args.output, dpi=80)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
