import json

import numpy as np
import tensorflow as tf

from lambda_keras.training.detection.datasets import shapes


def test_writes_real_coco_with_polygons_and_rle(tmp_path):
    paths = shapes.write_shapes_dataset(tmp_path, num_train=6, num_val=3, image_size=64)
    train = json.loads(paths["train_annotations"].read_text())
    assert len(train["images"]) == 6
    assert {c["id"] for c in train["categories"]} == {1, 3, 7}
    kinds = {type(a["segmentation"]).__name__ for a in train["annotations"]}
    assert kinds == {"list", "dict"}  # polygons and RLE
    image = train["images"][0]
    pixels = tf.io.decode_png(tf.io.read_file(str(paths["train_images"] / image["file_name"])))
    assert pixels.shape == (64, 64, 3)
    for ann in train["annotations"]:
        x, y, w, h = ann["bbox"]
        assert 0 <= x and 0 <= y and x + w <= 64 and y + h <= 64 and ann["area"] > 0


def test_same_seed_same_files_and_existing_splits_kept(tmp_path):
    first = shapes.write_shapes_dataset(tmp_path / "a", num_train=3, num_val=2, image_size=64)
    second = shapes.write_shapes_dataset(tmp_path / "b", num_train=3, num_val=2, image_size=64)
    assert first["val_annotations"].read_text() == second["val_annotations"].read_text()
    stamp = first["train_annotations"].stat().st_mtime_ns
    shapes.write_shapes_dataset(tmp_path / "a", num_train=3, num_val=2, image_size=64)
    assert first["train_annotations"].stat().st_mtime_ns == stamp
    a = tf.io.read_file(str(first["val_images"] / "000001.png")).numpy()
    b = tf.io.read_file(str(second["val_images"] / "000001.png")).numpy()
    assert np.array_equal(np.frombuffer(a, np.uint8), np.frombuffer(b, np.uint8))
