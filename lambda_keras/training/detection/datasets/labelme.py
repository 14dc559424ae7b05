"""labelme annotation folders -> COCO-format annotations (then every rule of
[`lambda_keras.training.detection.datasets.coco`][lambda_keras.training.detection.datasets.coco]
applies).

labelme writes one JSON file per image: ``{"shapes": [{"label", "points", "shape_type",
"group_id", ...}], "imagePath", "imageHeight", "imageWidth", ...}``. Here:

* ``polygon`` (at least 3 points), ``rectangle`` (2 corners), ``circle`` (centre and a point on
  the circle, as a 64-gon) and ``mask`` (labelme >= 5.3: a base64 PNG of the mask inside the
  2-corner box ``points``) are instances; shapes sharing a ``group_id`` and a label are one
  instance. ``point``, ``line`` and ``linestrip`` mark no area and any other type is unknown:
  both are errors naming the file, unless ``skip_shape_types`` names the type
  (``--skip_shape_types=line,point``): then those shapes are left out, and counted per type
  (shapes and files) in the COCO dict's ``info["skipped_shapes"]`` and the summary line.
* ``imagePath`` is relative to the JSON file (labelme's rule) and must exist.
* Categories are the labels in sorted order, ids 1, 2, ... (``labels`` fixes them, e.g. the
  union of a training and a validation folder).

    python -m lambda_keras.training.detection.datasets.labelme --input=DIR
    --output=annotations.json \
        [--skip_shape_types=line,point]

Training reads a folder directly: ``train_maskrcnn.py --train_annotations=labelme:DIR
--val_annotations=labelme:DIR2`` (the image flags may then be left out).
"""

from __future__ import annotations

import base64
import json
import math
import os
from pathlib import Path

import numpy as np

__all__ = ["PREFIX", "folder_labels", "labelme_to_coco", "skipped_summary", "write_coco"]

PREFIX = "labelme:"
"""How a training flag names a labelme folder instead of a COCO file (``labelme:<folder>``)."""
AREA_TYPES = ("polygon", "rectangle", "circle", "mask")
LINE_TYPES = ("point", "line", "linestrip", "points")


def _skip_types(skip_shape_types) -> frozenset[str]:
    """``skip_shape_types`` checked: known labelme shape types (a string is one type)."""
    types = (skip_shape_types,) if isinstance(skip_shape_types, str) else skip_shape_types
    types = frozenset(str(t) for t in types)
    unknown = sorted(types - set(AREA_TYPES + LINE_TYPES))
    if unknown:
        raise ValueError(
            f"`skip_shape_types` must name labelme shape types "
            f"({', '.join(AREA_TYPES + LINE_TYPES)}); received: {sorted(types)} "
            f"({', '.join(map(repr, unknown))} unknown)."
        )
    return types


def _shape_type(shape: dict) -> str:
    return shape.get("shape_type") or "polygon"  # labelme < 4 wrote no shape_type


def _json_files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        raise FileNotFoundError(f"labelme folder not found: {folder}")
    files = sorted(folder.glob("*.json"))
    if not files:
        raise ValueError(f"The labelme folder {folder} holds no .json files.")
    return files


def _read(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"{path} is not valid JSON: {err}") from err
    if not isinstance(data, dict) or not isinstance(data.get("shapes"), list):
        raise ValueError(f"{path} is not a labelme file: it has no 'shapes' list.")
    for key in ("imagePath", "imageHeight", "imageWidth"):
        if key not in data:
            raise ValueError(f"{path} is not a labelme file: it has no {key!r}.")
    return data


def folder_labels(folder: str | os.PathLike, skip_shape_types=()) -> set[str]:
    """Every label used in a labelme folder (by shapes of types not in ``skip_shape_types``)."""
    skip = _skip_types(skip_shape_types)
    return {
        str(shape.get("label"))
        for path in _json_files(Path(folder))
        for shape in _read(path)["shapes"]
        if _shape_type(shape) not in skip
    }


def labelme_to_coco(
    folder: str | os.PathLike,
    labels: list[str] | None = None,
    skip_shape_types: str | tuple[str, ...] | list[str] = (),
) -> dict:
    """A COCO annotations dict for the labelme folder ``folder``; image ``file_name`` s are
    relative to ``folder``.

    Args:
        labels: The categories in order (ids 1, 2, ...); default the folder's labels, sorted.
        skip_shape_types: Shape types to leave out instead of refusing them, e.g.
            ``("line", "point")``. What was left out is in ``info["skipped_shapes"]``:
            ``{type: {"shapes": count, "files": count}}``
            ([`skipped_summary`][lambda_keras.training.detection.datasets.labelme.skipped_summary]).
    """
    folder = Path(folder)
    files = _json_files(folder)
    skip = _skip_types(skip_shape_types)
    labels = sorted(folder_labels(folder, skip)) if labels is None else list(labels)
    ids = {label: i for i, label in enumerate(labels, start=1)}
    images, annotations = [], []
    skipped: dict[str, dict[str, int]] = {}
    for image_id, path in enumerate(files, start=1):
        data = _read(path)
        kinds = [_shape_type(shape) for shape in data["shapes"]]
        for kind in sorted(set(kinds) & skip):
            counts = skipped.setdefault(kind, {"shapes": 0, "files": 0})
            counts["shapes"] += kinds.count(kind)
            counts["files"] += 1
        image_path = (path.parent / data["imagePath"]).resolve()
        if not image_path.is_file():
            raise FileNotFoundError(
                f"{path}: imagePath {data['imagePath']!r} does not exist ({image_path})."
            )
        height, width = int(data["imageHeight"]), int(data["imageWidth"])
        images.append(
            {
                "id": image_id,
                "file_name": os.path.relpath(image_path, folder.resolve()),
                "height": height,
                "width": width,
            }
        )
        for label, segmentation in _instances(path, data, height, width, skip):
            if label not in ids:
                raise ValueError(f"{path}: label {label!r} is not among the labels {labels}.")
            annotations.append(
                _annotation(len(annotations) + 1, image_id, ids[label], segmentation, height, width)
            )
    return {
        "info": {"description": f"labelme folder {folder}", "skipped_shapes": skipped},
        "images": images,
        "annotations": annotations,
        "categories": [{"id": i, "name": label} for label, i in ids.items()],
    }


def skipped_summary(data: dict) -> str:
    """What [`labelme_to_coco`][lambda_keras.training.detection.datasets.labelme.labelme_to_coco]
    left out, e.g.
    ``"skipped 3 'line' shape(s) in 2 file(s), 1 'point' shape(s) in 1 file(s)"``; ``"skipped no
    shapes"`` when nothing was."""
    skipped = data.get("info", {}).get("skipped_shapes", {})
    if not skipped:
        return "skipped no shapes"
    return "skipped " + ", ".join(
        f"{c['shapes']} {kind!r} shape(s) in {c['files']} file(s)" for kind, c in skipped.items()
    )


def _instances(path: Path, data: dict, height: int, width: int, skip: frozenset[str]):
    """``(label, segmentation)`` per instance: COCO polygons, or an RLE for mask shapes."""
    groups: dict = {}
    for index, shape in enumerate(data["shapes"]):
        kind = _shape_type(shape)
        label = str(shape.get("label"))
        if kind in skip:
            continue
        if kind in LINE_TYPES:
            raise ValueError(
                f"{path}: shape {index} ({label!r}) is a {kind!r}, which marks no area; "
                f"instances must be one of {', '.join(AREA_TYPES)}. To leave such shapes out, "
                f"pass --skip_shape_types={kind} (skip_shape_types=({kind!r},) in Python)."
            )
        if kind not in AREA_TYPES:
            raise ValueError(
                f"{path}: shape {index} ({label!r}) has the unknown shape_type {kind!r}; "
                f"known: {', '.join(AREA_TYPES + LINE_TYPES)}."
            )
        part = _segmentation(path, index, label, kind, shape, height, width)
        group = shape.get("group_id")
        key = (label, index) if group is None else (label, "group", group)
        groups.setdefault(key, []).append(part)
    for (label, *_), parts in groups.items():
        yield label, _merge(parts, height, width)


def _segmentation(path, index, label, kind, shape, height, width):
    points = np.asarray(shape.get("points") or [], dtype=np.float64).reshape(-1, 2)
    needed = {"polygon": 3, "rectangle": 2, "circle": 2, "mask": 2}[kind]
    if len(points) < needed:
        raise ValueError(
            f"{path}: shape {index} ({label!r}) is a {kind} of {len(points)} points; it needs "
            f"at least {needed}."
        )
    if kind == "rectangle":
        (x1, y1), (x2, y2) = points[:2]
        points = np.array([[x1, y1], [x2, y1], [x2, y2], [x1, y2]])
    elif kind == "circle":
        (cx, cy), edge = points[:2]
        r = float(np.hypot(*(edge - (cx, cy))))
        angles = np.linspace(0, 2 * math.pi, 64, endpoint=False)
        points = np.stack([cx + r * np.cos(angles), cy + r * np.sin(angles)], 1)
    elif kind == "mask":
        return _mask_rle(path, index, label, shape, points, height, width)
    return [points.reshape(-1).tolist()]


def _mask_rle(path, index, label, shape, points, height, width):
    import tensorflow as tf
    from pycocotools import mask as mask_utils

    try:
        crop = tf.io.decode_png(base64.b64decode(shape.get("mask") or ""), channels=1).numpy()
    except Exception as err:  # TensorFlow's and base64's own error types
        raise ValueError(f"{path}: shape {index} ({label!r}) has no readable mask PNG.") from err
    x1, y1 = (int(round(v)) for v in points[0])
    full = np.zeros((height, width), np.uint8)
    h = min(crop.shape[0], height - y1)
    w = min(crop.shape[1], width - x1)
    full[y1 : y1 + h, x1 : x1 + w] = crop[:h, :w, 0] > 0
    return mask_utils.encode(np.asfortranarray(full))


def _merge(parts, height: int, width: int):
    """One instance's parts: their polygons together, or one RLE when a part is a mask."""
    if all(isinstance(part, list) for part in parts):
        return [polygon for part in parts for polygon in part]
    from pycocotools import mask as mask_utils

    rles = [
        part
        if isinstance(part, dict)
        else mask_utils.merge(mask_utils.frPyObjects(part, height, width))
        for part in parts
    ]
    return mask_utils.merge(rles)


def _annotation(ann_id, image_id, category_id, segmentation, height, width) -> dict:
    from pycocotools import mask as mask_utils

    if isinstance(segmentation, dict):
        rle = segmentation
        segmentation = {"size": rle["size"], "counts": rle["counts"].decode("ascii")}
    else:
        rle = mask_utils.merge(mask_utils.frPyObjects(segmentation, height, width))
    return {
        "id": ann_id,
        "image_id": image_id,
        "category_id": category_id,
        "segmentation": segmentation,
        "bbox": [float(b) for b in mask_utils.toBbox(rle)],
        "area": float(mask_utils.area(rle)),
        "iscrowd": 0,
    }


def write_coco(
    folder: str | os.PathLike,
    output: str | os.PathLike,
    labels: list[str] | None = None,
    skip_shape_types: str | tuple[str, ...] | list[str] = (),
) -> Path:
    """Write
    [`labelme_to_coco`][lambda_keras.training.detection.datasets.labelme.labelme_to_coco]'s
    annotations
    for ``folder`` to ``output``; returns it."""
    return _write(labelme_to_coco(folder, labels, skip_shape_types), output)


def _write(data: dict, output: str | os.PathLike) -> Path:
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(data))
    return output


def main(argv=None) -> None:
    import argparse
    import sys

    parser = argparse.ArgumentParser(description="labelme folder -> COCO annotations JSON")
    parser.add_argument("--input", required=True, help="folder of labelme .json files")
    parser.add_argument("--output", required=True, help="COCO annotations file to write")
    parser.add_argument(
        "--skip_shape_types",
        default="",
        help="comma-separated shape types to leave out (e.g. line,point) instead of refusing",
    )
    args = parser.parse_args(argv)
    skip = [t for t in args.skip_shape_types.split(",") if t]
    try:
        data = labelme_to_coco(args.input, skip_shape_types=skip)
    except (ValueError, FileNotFoundError) as err:
        sys.exit(f"labelme: {err}")
    path = _write(data, args.output)
    print(
        f"Wrote {path}: {len(data['images'])} images, {len(data['annotations'])} instances, "
        f"{len(data['categories'])} categories; {skipped_summary(data)}; its images are "
        f"relative to {args.input}."
    )


if __name__ == "__main__":
    main()
