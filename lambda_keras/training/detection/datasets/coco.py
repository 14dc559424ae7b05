"""COCO-format data for Mask R-CNN: an annotations JSON and an image folder -> ``tf.data``.

Rules (each applied before anything is traced, with the file and annotation id named):

* Category ids are mapped to contiguous labels ``0..C-1`` in increasing id order
  (``CocoSource.category_ids`` maps back). A category whose ``id`` is not an integer >= 0
  (``true`` is not one), an ``id`` given twice, or an annotation whose ``category_id`` is not
  one of the categories' ids is an error.
* ``iscrowd`` regions are not trained on (a missing ``iscrowd`` means 0); they stay in the JSON
  for ``COCOeval``, which ignores detections on them.
* Boxes come from ``bbox`` (``[x, y, width, height]``: four finite numbers, width and
  height at least 0, else an error), clipped to the image; an annotation whose clipped box is
  narrower or lower than 1 pixel, or whose mask is empty, is skipped and counted
  (``CocoSource.skipped``). Missing ``area`` is not needed. The targets made keep the rule
  ``MaskRCNN.fit`` checks ([target_checks][lambda_keras.detection.target_checks]).
* Segmentations: polygons (clipped to the image) or RLE, decoded with pycocotools; an
  annotation without one trains its box with a box-shaped mask.
* Images without (usable) objects are kept: they teach the background.
* Greyscale and RGBA images are read as RGB. More than ``max_instances`` objects in one image is
  an error that names the image (COCO has at most 93). A damaged or truncated image file (its
  signature and end marker are checked when the file is loaded) is an error listing the files:
  skipping it would silently change both training and ``COCOeval``.

Each image is resized so that its longer side is ``image_size`` (times a random scale in
``scale_range`` when training: large-scale jitter, App. F.3), randomly cropped (training) and
padded to ``image_size x image_size``; training also flips horizontally. Masks travel in their
boxes' frames (``mask_size x mask_size``), so scaling and cropping never resample them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import math
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from lambda_keras import _validation as v
from lambda_keras.detection import ops
from lambda_keras.detection.image_size import check_image_size
from lambda_keras.detection.transform_graph import letterbox_size
from lambda_keras.image_files import is_damaged_image
from lambda_keras.labels_file import is_category_id

__all__ = ["CocoSource", "load_coco", "make_dataset"]


@dataclasses.dataclass
class CocoSource:
    """A validated COCO-format data set.

    Attributes:
        annotations_file: The COCO annotations JSON.
        image_folder: The folder of its images.
        coco: The ``pycocotools.coco.COCO`` index (for evaluation).
        category_ids: Label -> COCO category id.
        class_names: Label -> category name.
        image_ids: Every image id, in file order.
        skipped: Annotation ids left out of training (degenerate box or empty mask).
    """

    annotations_file: Path
    image_folder: Path
    coco: object
    category_ids: tuple[int, ...]
    class_names: tuple[str, ...]
    image_ids: tuple[int, ...]
    skipped: tuple[int, ...] = ()

    @property
    def num_classes(self) -> int:
        return len(self.category_ids)


def load_coco(annotations_file: str | Path, image_folder: str | Path) -> CocoSource:
    """Read and check a COCO-format annotations file and its image folder."""
    from pycocotools.coco import COCO  # the [detection] extra

    annotations_file, image_folder = Path(annotations_file), Path(image_folder)
    if not annotations_file.is_file():
        raise FileNotFoundError(f"Annotations file not found: {annotations_file}")
    if not image_folder.is_dir():
        raise FileNotFoundError(f"Image folder not found: {image_folder}")
    if annotations_file.stat().st_size == 0:
        raise ValueError(f"The annotations file {annotations_file} is empty (0 bytes).")
    try:
        data = json.loads(annotations_file.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"{annotations_file} is not valid JSON: {err}") from err
    _check_structure(data, annotations_file, image_folder)
    coco = COCO()
    coco.dataset = data
    with contextlib.redirect_stdout(io.StringIO()):  # pycocotools prints its progress
        coco.createIndex()
    category_ids = tuple(sorted(c["id"] for c in data["categories"]))
    names = {c["id"]: c.get("name", str(c["id"])) for c in data["categories"]}
    return CocoSource(
        annotations_file=annotations_file,
        image_folder=image_folder,
        coco=coco,
        category_ids=category_ids,
        class_names=tuple(names[i] for i in category_ids),
        image_ids=tuple(image["id"] for image in data["images"]),
    )


def _check_structure(data, annotations_file: Path, image_folder: Path) -> None:
    if not isinstance(data, dict) or not all(k in data for k in ("images", "categories")):
        raise ValueError(
            f"{annotations_file} is not a COCO annotations file: it needs 'images' and "
            "'categories' lists (and 'annotations')."
        )
    data.setdefault("annotations", [])
    if not data["categories"]:
        raise ValueError(f"{annotations_file} has no categories.")
    _check_categories(data["categories"], annotations_file)
    if not data["images"]:
        raise ValueError(
            f"{annotations_file} lists no images: there is nothing to train on or score."
        )
    known = {c["id"] for c in data["categories"]}
    images = {image["id"]: image for image in data["images"]}
    damaged = []
    for image in data["images"]:
        path = image_folder / image["file_name"]
        if not path.is_file():
            raise FileNotFoundError(
                f"{annotations_file}: image {image['id']} names {image['file_name']!r}, which "
                f"is not in {image_folder}."
            )
        if is_damaged_image(str(path)):
            damaged.append(f"image {image['id']}: {path}")
    if damaged:  # an error, not a skip: a skipped image would change training and COCOeval
        shown = "\n  ".join(damaged[:10]) + ("\n  ..." if len(damaged) > 10 else "")
        raise ValueError(
            f"{annotations_file}: {len(damaged)} image file(s) are damaged, truncated or not "
            f"JPEG/PNG/GIF/BMP:\n  {shown}"
        )
    for ann in data["annotations"]:
        if not is_category_id(ann.get("category_id")) or ann["category_id"] not in known:
            raise ValueError(
                f"{annotations_file}: annotation {ann.get('id')} has category_id "
                f"{ann.get('category_id')!r}, which is not one of the categories' integer "
                f"ids {sorted(known)}."
            )
        if ann.get("image_id") not in images:
            raise ValueError(
                f"{annotations_file}: annotation {ann.get('id')} refers to image "
                f"{ann.get('image_id')!r}, which is not in 'images'."
            )
        if not _valid_bbox(ann.get("bbox")):
            raise ValueError(
                f"{annotations_file}: annotation {ann.get('id')} has no valid 'bbox' "
                "([x, y, width, height]: four finite numbers, width and height >= 0); "
                f"received {ann.get('bbox')!r}."
            )
        ann.setdefault("iscrowd", 0)
        ann.setdefault("area", float(max(ann["bbox"][2], 0) * max(ann["bbox"][3], 0)))


def _check_categories(categories, annotations_file: Path) -> None:
    """Each category an object with an integer ``id`` (not a bool), no id twice."""
    if not isinstance(categories, list):
        raise ValueError(
            f"{annotations_file}: 'categories' must be a list of {{'id': int, 'name': str}}; "
            f"received {categories!r}."
        )
    seen = set()
    for category in categories:
        cid = category.get("id") if isinstance(category, dict) else None
        if not is_category_id(cid):
            raise ValueError(
                f"{annotations_file}: each category must have an integer 'id' >= 0 (a bool is "
                f"not one); received the category {category!r} with 'id'={cid!r}."
            )
        if category["id"] in seen:
            raise ValueError(
                f"{annotations_file}: two categories have 'id' {category['id']}; each "
                "category's 'id' must be unique."
            )
        seen.add(category["id"])


def _valid_bbox(bbox) -> bool:
    if not isinstance(bbox, (list, tuple)) or len(bbox) != 4:
        return False
    numbers = all(v.is_number(c) and math.isfinite(c) for c in bbox)
    return numbers and bbox[2] >= 0 and bbox[3] >= 0


def _instances(source: CocoSource, image_id: int, mask_size: int, max_instances: int):
    """Boxes ``[n, 4]`` (yxyx), labels ``[n]`` and box-frame masks ``[n, m, m]`` of one image."""
    coco = source.coco
    info = coco.imgs[image_id]
    height, width = info["height"], info["width"]
    label_of = {cid: i for i, cid in enumerate(source.category_ids)}
    boxes, labels, masks, skipped = [], [], [], []
    for ann in coco.imgToAnns.get(image_id, []):
        if ann.get("iscrowd", 0):
            continue
        x, y, w, h = ann["bbox"]
        box = [max(y, 0.0), max(x, 0.0), min(y + h, height), min(x + w, width)]
        mask = _mask(coco, ann, box, height, width)
        if box[2] - box[0] < 1 or box[3] - box[1] < 1 or not mask.any():
            skipped.append(ann["id"])
            continue
        boxes.append(box)
        labels.append(label_of[ann["category_id"]])
        masks.append(mask)
    if len(boxes) > max_instances:
        raise ValueError(
            f"{source.annotations_file}: image {image_id} ({info['file_name']}) has "
            f"{len(boxes)} objects, more than max_instances={max_instances}."
        )
    if not boxes:
        empty = np.zeros((0, mask_size, mask_size), np.float32)
        return np.zeros((0, 4), np.float32), np.zeros((0,), np.int32), empty, skipped
    boxes = np.asarray(boxes, np.float32)
    framed = ops.crop_masks(
        np.stack(masks)[None].astype(np.float32),
        boxes[None],
        np.arange(len(boxes))[None],
        mask_size=mask_size,
    )[0]
    return (
        boxes,
        np.asarray(labels, np.int32),
        np.asarray(keras.ops.convert_to_numpy(framed)),
        skipped,
    )


def _mask(coco, ann, box, height: int, width: int) -> np.ndarray:
    segmentation = ann.get("segmentation")
    if segmentation:
        if isinstance(segmentation, list):  # polygons: clip to the image
            segmentation = [
                np.clip(np.asarray(p, float), 0, [width, height] * (len(p) // 2)).tolist()
                for p in segmentation
                if len(p) >= 6
            ]
            if not segmentation:
                return np.zeros((height, width), bool)
        return coco.annToMask({**ann, "segmentation": segmentation}).astype(bool)
    mask = np.zeros((height, width), bool)
    y1, x1, y2, x2 = (int(round(c)) for c in box)
    mask[y1:y2, x1:x2] = True
    return mask


def make_dataset(
    source: CocoSource,
    *,
    image_size: int,
    global_batch_size: int,
    training: bool,
    max_instances: int = 100,
    mask_size: int = 56,
    scale_range: tuple[float, float] = (0.1, 2.0),
    seed: int | None = None,
) -> tf.data.Dataset:
    """Batches ``(images, targets)`` for ``MaskRCNN.fit``, or, with ``training=False``,
    ``(images, info)`` with ``info = {"image_id", "scale", "height", "width"}`` for evaluation.

    ``images``: ``[batch, image_size, image_size, 3]`` float32 in ``[0, 255]``; ``targets``:
    ``{"boxes", "classes", "masks", "mask_boxes"}`` padded to ``max_instances``. Batches of
    ``global_batch_size`` (all replicas together), as classification's
    [`make_dataset`][lambda_keras.training.classification.data.make_dataset].
    """
    image_size = check_image_size(image_size)
    global_batch_size = v.positive_int("global_batch_size", global_batch_size)
    records, skipped = [], []
    for image_id in source.image_ids:
        if training:
            boxes, labels, masks, dropped = _instances(source, image_id, mask_size, max_instances)
            skipped.extend(dropped)
        else:  # evaluation reads only the images: no masks decoded, nothing padded
            boxes, labels = np.zeros((0, 4), np.float32), np.zeros((0,), np.int32)
            masks = np.zeros((0, mask_size, mask_size), np.float32)
        records.append((image_id, boxes, labels, masks))
    if training:
        source.skipped = tuple(skipped)
    folder = source.image_folder

    def generate():
        for image_id, boxes, labels, masks in records:
            path = str(folder / source.coco.imgs[image_id]["file_name"])
            yield path, image_id, boxes, labels, masks

    signature = (
        tf.TensorSpec((), tf.string),
        tf.TensorSpec((), tf.int64),
        tf.TensorSpec((None, 4), tf.float32),
        tf.TensorSpec((None,), tf.int32),
        tf.TensorSpec((None, mask_size, mask_size), tf.float32),
    )
    data = tf.data.Dataset.from_generator(generate, output_signature=signature)
    if training:
        data = data.cache().shuffle(len(records), seed=seed).repeat()
    # Each element's position in the stream seeds its augmentation (stateless random ops): the
    # same run gives the same batches, whatever the parallel map's order.
    prepare = _Prepare(image_size, max_instances, training, scale_range, seed or 0)
    data = data.enumerate().map(prepare, num_parallel_calls=tf.data.AUTOTUNE)
    return data.batch(global_batch_size, drop_remainder=training).prefetch(tf.data.AUTOTUNE)


@dataclasses.dataclass
class _Prepare:
    image_size: int
    max_instances: int
    training: bool
    scale_range: tuple[float, float]
    seed: int

    def __call__(self, index, record):
        path, image_id, boxes, labels, masks = record
        seeds = tf.random.experimental.stateless_split(tf.stack([self.seed, index]), 3)
        image = tf.io.decode_image(tf.io.read_file(path), channels=3, expand_animations=False)
        image = tf.cast(image, tf.float32)
        shape = tf.cast(tf.shape(image)[:2], tf.float32)
        jitter = 1.0
        if self.training:
            low, high = self.scale_range
            jitter = tf.random.stateless_uniform((), seeds[0], low, high)
        scale, size = letterbox_size(shape, self.image_size, jitter)
        image = tf.image.resize(image, size)
        frames = boxes * scale
        offset = tf.zeros(2)
        if self.training:
            room = tf.maximum(tf.cast(size, tf.float32) - self.image_size, 0.0)
            offset = tf.floor(tf.random.stateless_uniform((2,), seeds[1]) * (room + 1))
            start = tf.cast(offset, tf.int32)
            image = image[
                start[0] : start[0] + self.image_size, start[1] : start[1] + self.image_size
            ]
            frames = frames - tf.tile(offset, [2])
        image = tf.image.pad_to_bounding_box(image, 0, 0, self.image_size, self.image_size)
        # Clipped to the square canvas (TensorFlow here: tf.data runs it on every backend).
        boxes = tf.clip_by_value(frames, 0.0, float(self.image_size))
        if self.training:
            flip = tf.random.stateless_uniform((), seeds[2]) < 0.5
            image, boxes, frames, masks = _maybe_flip(
                flip, image, boxes, frames, masks, self.image_size
            )
        visible = (boxes[:, 2] - boxes[:, 0] >= 1) & (boxes[:, 3] - boxes[:, 1] >= 1)
        labels = tf.where(visible, labels, -1)
        if not self.training:
            info = {"image_id": image_id, "scale": scale, "height": shape[0], "width": shape[1]}
            return image, info
        return image, self._pad(boxes, labels, masks, frames)

    def _pad(self, boxes, labels, masks, frames):
        n = tf.shape(labels)[0]
        pad = self.max_instances - n

        def padded(t, value=0):
            rank = len(t.shape)
            return tf.pad(t, [[0, pad]] + [[0, 0]] * (rank - 1), constant_values=value)

        m = masks.shape[-1]
        return {
            "boxes": tf.ensure_shape(padded(boxes), (self.max_instances, 4)),
            "classes": tf.ensure_shape(padded(labels, -1), (self.max_instances,)),
            "masks": tf.ensure_shape(padded(masks), (self.max_instances, m, m)),
            "mask_boxes": tf.ensure_shape(padded(frames), (self.max_instances, 4)),
        }


def _maybe_flip(flip, image, boxes, frames, masks, width):
    def flipped():
        mirror = lambda b: tf.stack(  # noqa: E731
            [b[:, 0], width - b[:, 3], b[:, 2], width - b[:, 1]], -1
        )
        return tf.reverse(image, [1]), mirror(boxes), mirror(frames), tf.reverse(masks, [2])

    return tf.cond(flip, flipped, lambda: (image, boxes, frames, masks))
