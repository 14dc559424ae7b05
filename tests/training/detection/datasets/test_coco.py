"""COCO-format input: label mapping, the documented rules for awkward annotations, batches."""

import json

import numpy as np
import pytest
import tensorflow as tf

from lambda_keras.detection.target_checks import check_targets
from lambda_keras.training.detection.datasets import coco


def _write(tmp_path, annotations, images=None, categories=None, image_mode="RGB"):
    folder = tmp_path / "images"
    folder.mkdir(exist_ok=True)
    channels = {"RGB": 3, "L": 1, "RGBA": 4}[image_mode]
    images = images or [{"id": 1, "file_name": "a.png", "height": 64, "width": 96}]
    for image in images:
        pixels = np.full((image["height"], image["width"], channels), 120, np.uint8)
        tf.io.write_file(str(folder / image["file_name"]), tf.io.encode_png(pixels))
    data = {
        "images": images,
        "annotations": annotations,
        "categories": categories or [{"id": 5, "name": "a"}, {"id": 9, "name": "b"}],
    }
    path = tmp_path / "annotations.json"
    path.write_text(json.dumps(data))
    return coco.load_coco(path, folder)


def _box(ann_id, category, bbox, **extra):
    return {"id": ann_id, "image_id": 1, "category_id": category, "bbox": bbox, **extra}


def test_labels_are_contiguous_and_awkward_annotations_follow_the_rules(tmp_path):
    polygon_outside = [[-10.0, -10.0, 40.0, -10.0, 40.0, 30.0, -10.0, 30.0]]
    source = _write(
        tmp_path,
        [
            _box(1, 9, [10, 10, 20, 20]),  # no segmentation, no area, no iscrowd: box mask
            _box(2, 5, [-10, -10, 50, 40], segmentation=polygon_outside),  # clipped polygon
            _box(3, 5, [30, 30, 0, 10]),  # zero width: skipped and counted
            _box(
                4,
                9,
                [0, 0, 96, 64],
                iscrowd=1,
                segmentation={"size": [64, 96], "counts": [0, 6144]},
            ),
            _box(5, 9, [200, 10, 20, 20]),  # beyond the image: clipped to nothing, skipped
            _box(6, 5, [80, 50, 40, 40]),  # over the corner: clipped
        ],
    )
    assert source.category_ids == (5, 9) and source.class_names == ("a", "b")
    data = coco.make_dataset(
        source, image_size=128, global_batch_size=1, training=True, max_instances=4
    )
    images, targets = next(iter(data))
    assert images.shape == (1, 128, 128, 3)
    labels = targets["classes"].numpy()[0]
    # The crowd, the empty box and the one beyond the image are out (seed 0's crop keeps the
    # other three).
    assert sorted(labels[labels >= 0].tolist()) == [0, 0, 1], labels
    assert source.skipped == (3, 5)
    # Whatever the scale, crop and flip, the targets keep the rule fit checks.
    for _, targets in data.take(12):
        check_targets({k: v.numpy() for k, v in targets.items()}, source.num_classes)


def test_image_without_objects_is_kept_and_evaluation_input(tmp_path):
    source = _write(tmp_path, [])
    training = coco.make_dataset(source, image_size=64, global_batch_size=1, training=True)
    _, targets = next(iter(training))
    assert (targets["classes"].numpy() == -1).all()
    images, info = next(
        iter(coco.make_dataset(source, image_size=128, global_batch_size=1, training=False))
    )
    assert images.shape == (1, 128, 128, 3)
    assert float(info["scale"][0]) == pytest.approx(128 / 96)
    assert int(info["image_id"][0]) == 1


@pytest.mark.parametrize("mode", ["L", "RGBA"])
def test_greyscale_and_rgba_images_are_read_as_rgb(tmp_path, mode):
    source = _write(tmp_path, [_box(1, 5, [1, 1, 10, 10])], image_mode=mode)
    images, _ = next(
        iter(coco.make_dataset(source, image_size=64, global_batch_size=1, training=False))
    )
    assert images.shape[-1] == 3


@pytest.mark.parametrize(
    "annotations, match",
    [
        ([_box(7, 4, [1, 1, 5, 5])], "annotation 7 has category_id 4"),
        ([{**_box(8, 5, [1, 1, 5, 5]), "image_id": 3}], "annotation 8 refers to image 3"),
        ([_box(9, 5, [1, 1, 5])], "annotation 9 has no valid 'bbox'"),
        ([_box(10, 5, [1, float("nan"), 5, 5])], r"annotation 10 .*received \[1, nan, 5, 5\]"),
        ([_box(11, 5, [1, 1, float("inf"), 5])], r"annotation 11 has no valid 'bbox'"),
        ([_box(12, 5, [20, 1, -10, 5])], r"annotation 12 .*width and height >= 0"),
        ([_box(13, 5, [1, "1", 5, 5])], r"annotation 13 has no valid 'bbox'"),
    ],
)
def test_bad_annotations_name_the_annotation(tmp_path, annotations, match):
    with pytest.raises(ValueError, match=match):
        _write(tmp_path, annotations)


@pytest.mark.parametrize(
    "categories, match",
    [
        ([{"id": True, "name": "a"}], r"integer 'id' >= 0 .*'name': 'a'\} with 'id'=True"),
        ([{"id": 5, "name": "a"}, {"id": "9", "name": "b"}], r"'b'\} with 'id'='9'"),
        ([{"id": 5.0, "name": "a"}], r"with 'id'=5.0"),
        ([{"name": "a"}], r"\{'name': 'a'\} with 'id'=None"),
        (["a"], r"received the category 'a' with 'id'=None"),
        ([{"id": 5, "name": "a"}, {"id": 5, "name": "b"}], r"two categories have 'id' 5"),
    ],
)
def test_bad_categories_name_the_category_and_its_id(tmp_path, categories, match):
    """JSON's ``true`` is a Python bool, which Python counts as the int 1."""
    with pytest.raises(ValueError, match=match):
        _write(tmp_path, [], categories=categories)


def test_an_annotation_whose_category_id_is_a_bool_is_refused(tmp_path):
    categories = [{"id": 1, "name": "a"}]  # True == 1: it was taken for category 1
    with pytest.raises(ValueError, match="annotation 7 has category_id True, which is not one"):
        _write(tmp_path, [_box(7, True, [1, 1, 5, 5])], categories=categories)


def test_too_many_objects_and_missing_files(tmp_path):
    source = _write(tmp_path, [_box(i, 5, [i, i, 5, 5]) for i in range(1, 5)])
    with pytest.raises(
        ValueError, match=r"image 1 \(a.png\) has 4 objects, more than max_instances=3"
    ):
        coco.make_dataset(
            source, image_size=64, global_batch_size=1, training=True, max_instances=3
        )
    with pytest.raises(FileNotFoundError, match="Annotations file not found"):
        coco.load_coco(tmp_path / "missing.json", tmp_path)
    (tmp_path / "images" / "a.png").unlink()
    with pytest.raises(FileNotFoundError, match="names 'a.png', which is not in"):
        coco.load_coco(tmp_path / "annotations.json", tmp_path / "images")
    truncated = tf.io.encode_png(np.zeros((64, 96, 3), np.uint8)).numpy()[:40]
    (tmp_path / "images" / "a.png").write_bytes(truncated)
    with pytest.raises(ValueError, match=r"1 image file\(s\) are damaged.*\n  image 1: .*a\.png"):
        coco.load_coco(tmp_path / "annotations.json", tmp_path / "images")
    (tmp_path / "empty.json").write_text("")
    with pytest.raises(ValueError, match="empty.json is empty"):
        coco.load_coco(tmp_path / "empty.json", tmp_path / "images")
    (tmp_path / "no_images.json").write_text('{"images": [], "categories": [{"id": 1}]}')
    with pytest.raises(ValueError, match="no_images.json lists no images"):
        coco.load_coco(tmp_path / "no_images.json", tmp_path / "images")
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(ValueError, match="is not valid JSON"):
        coco.load_coco(tmp_path / "broken.json", tmp_path / "images")


def _batches(source, seed, count=6):
    data = coco.make_dataset(source, image_size=64, global_batch_size=2, training=True, seed=seed)
    return [(images.numpy(), targets["boxes"].numpy()) for images, targets in data.take(count)]


def test_training_batches_are_the_same_for_the_same_seed(tmp_path):
    """Augmentation seeded per element (stateless): a run and its repeat see the same batches
    whatever the parallel map's order (two devices must train as one); another seed differs."""
    images = [
        {"id": i, "file_name": f"{i}.png", "height": 48 + 8 * i, "width": 96} for i in (1, 2, 3)
    ]
    annotations = [
        {"id": i, "image_id": i, "category_id": 5, "bbox": [10, 8, 30, 20]} for i in (1, 2, 3)
    ]
    source = _write(tmp_path, annotations, images)
    first, again, other = _batches(source, 1), _batches(source, 1), _batches(source, 2)
    for (a_images, a_boxes), (b_images, b_boxes) in zip(first, again, strict=True):
        np.testing.assert_array_equal(a_images, b_images)
        np.testing.assert_array_equal(a_boxes, b_boxes)
    assert any(not np.array_equal(a, b) for (_, a), (_, b) in zip(first, other, strict=True))
