"""labelme folders (files written in labelme's documented format) -> COCO annotations and
training sets; every refusal names the file."""

import base64
import json

import numpy as np
import pytest
import tensorflow as tf

from lambda_keras.training.detection import DetectionConfig
from lambda_keras.training.detection.data import sources as _sources
from lambda_keras.training.detection.datasets import coco, labelme


def write_image(path, height=40, width=60):
    pixels = np.random.default_rng(0).integers(0, 255, (height, width, 3), dtype=np.uint8)
    path.write_bytes(tf.io.encode_png(pixels).numpy())


def write_labelme(folder, name, shapes, image_path=None, height=40, width=60):
    folder.mkdir(parents=True, exist_ok=True)
    if image_path is None:
        image_path = f"{name}.png"
        write_image(folder / image_path, height, width)
    document = {
        "version": "5.5.0",
        "flags": {},
        "shapes": [
            {
                "label": label,
                "points": points,
                "group_id": group,
                "description": "",
                "shape_type": kind,
                "flags": {},
                **extra,
            }
            for label, kind, points, group, extra in shapes
        ],
        "imagePath": image_path,
        "imageData": None,
        "imageHeight": height,
        "imageWidth": width,
    }
    (folder / f"{name}.json").write_text(json.dumps(document))


def mask_png(mask: np.ndarray) -> str:
    return base64.b64encode(
        tf.io.encode_png(mask[..., None].astype(np.uint8) * 255).numpy()
    ).decode()


def test_every_area_shape_becomes_an_instance_and_groups_merge(tmp_path):
    block = np.zeros((6, 8), bool)
    block[1:5, 2:6] = True
    write_labelme(
        tmp_path,
        "a",
        [
            ("dog", "polygon", [[5, 5], [25, 5], [25, 20], [5, 20]], None, {}),
            ("cat", "rectangle", [[30, 10], [50, 30]], None, {}),
            ("cat", "circle", [[15, 30], [20, 30]], None, {}),
            ("dog", "polygon", [[40, 2], [55, 2], [55, 8]], 7, {}),  # one dog in two parts
            ("dog", "polygon", [[40, 30], [55, 30], [55, 38]], 7, {}),
            ("bird", "mask", [[10, 20], [18, 26]], None, {"mask": mask_png(block)}),
        ],
    )
    data = labelme.labelme_to_coco(tmp_path)
    assert [c["name"] for c in data["categories"]] == ["bird", "cat", "dog"]
    anns = data["annotations"]
    assert len(anns) == 5 and {a["category_id"] for a in anns} == {1, 2, 3}
    rectangle = next(a for a in anns if a["category_id"] == 2 and a["area"] > 300)
    np.testing.assert_allclose(rectangle["bbox"], [30, 10, 20, 20], atol=1)
    grouped = [a for a in anns if a["category_id"] == 3 and len(a["segmentation"]) == 2]
    assert len(grouped) == 1 and grouped[0]["bbox"][3] > 30  # spans both parts
    bird = next(a for a in anns if a["category_id"] == 1)
    assert bird["area"] == block.sum() and bird["bbox"] == [12.0, 21.0, 4.0, 4.0]
    output = labelme.write_coco(tmp_path, tmp_path / "out" / "coco.json")
    source = coco.load_coco(output, tmp_path)  # and coco.py's rules hold
    assert source.class_names == ("bird", "cat", "dog") and len(source.image_ids) == 1


@pytest.mark.parametrize(
    "shape, image_path, message",
    [
        (("x", "ellipse", [[1, 1], [5, 5]], None, {}), None, "unknown shape_type 'ellipse'"),
        (("x", "polygon", [[1, 1], [5, 5]], None, {}), None, "polygon of 2 points.*at least 3"),
        (("x", "linestrip", [[1, 1], [5, 5], [9, 2]], None, {}), None, "marks no area"),
        (
            ("x", "polygon", [[1, 1], [5, 5], [1, 9]], None, {}),
            "gone.png",
            "imagePath 'gone.png' does not exist",
        ),
    ],
)
def test_bad_files_are_refused_naming_the_file(tmp_path, shape, image_path, message):
    write_labelme(tmp_path, "broken", [shape], image_path=image_path)
    with pytest.raises((ValueError, FileNotFoundError), match=f"broken.json.*{message}"):
        labelme.labelme_to_coco(tmp_path)


def _folder_with_lines_and_points(folder):
    """Two files mixing instances with shapes that mark no area (as labelme's own instance
    segmentation example draws thin parts); 'scratch' is drawn only as lines."""
    square = [[5, 5], [25, 5], [25, 20], [5, 20]]
    write_labelme(
        folder,
        "a",
        [
            ("cat", "polygon", square, None, {}),
            ("scratch", "line", [[1, 1], [9, 9]], None, {}),
            ("scratch", "line", [[2, 1], [9, 3]], None, {}),
            ("eye", "point", [[10, 10]], None, {}),
        ],
    )
    write_labelme(
        folder,
        "b",
        [("scratch", "line", [[3, 3], [9, 9]], None, {}), ("dog", "rectangle", square[::2], 1, {})],
    )


def test_shapes_without_area_are_refused_or_skipped_and_counted(tmp_path, capsys):
    _folder_with_lines_and_points(tmp_path / "in")
    with pytest.raises(ValueError, match="a.json: shape 1 .* --skip_shape_types=line"):
        labelme.labelme_to_coco(tmp_path / "in")
    with pytest.raises(ValueError, match="a.json: shape 3 .*'point'.*--skip_shape_types=point"):
        labelme.labelme_to_coco(tmp_path / "in", skip_shape_types="line")
    data = labelme.labelme_to_coco(tmp_path / "in", skip_shape_types=("line", "point"))
    assert [c["name"] for c in data["categories"]] == ["cat", "dog"]  # no 'scratch', no 'eye'
    assert len(data["annotations"]) == 2
    assert data["info"]["skipped_shapes"] == {
        "line": {"shapes": 3, "files": 2},
        "point": {"shapes": 1, "files": 1},
    }
    summary = "skipped 3 'line' shape(s) in 2 file(s), 1 'point' shape(s) in 1 file(s)"
    assert labelme.skipped_summary(data) == summary
    # The command line: refused (exit status, one line), then through with the flag.
    with pytest.raises(SystemExit, match="labelme: .*--skip_shape_types=line"):
        labelme.main(["--input", str(tmp_path / "in"), "--output", str(tmp_path / "x.json")])
    assert not (tmp_path / "x.json").exists()
    out = tmp_path / "out.json"
    labelme.main(
        ["--input", str(tmp_path / "in"), f"--output={out}", "--skip_shape_types=line,point"]
    )
    printed = capsys.readouterr().out
    assert "2 images, 2 instances, 2 categories; " + summary in printed
    assert coco.load_coco(out, tmp_path / "in").class_names == ("cat", "dog")
    clean = labelme.labelme_to_coco(tmp_path / "in", skip_shape_types=["line", "point", "circle"])
    assert "circle" not in clean["info"]["skipped_shapes"]  # nothing of that type was there
    with pytest.raises(ValueError, match="skip_shape_types.*'ellipse' unknown"):
        labelme.labelme_to_coco(tmp_path / "in", skip_shape_types=["line", "ellipse"])


def test_training_reads_labelme_folders_with_one_category_list(tmp_path):
    square = [[5, 5], [25, 5], [25, 20], [5, 20]]
    write_labelme(
        tmp_path / "train",
        "t",
        [("cat", "polygon", square, None, {}), ("dog", "polygon", square, None, {})],
    )
    write_labelme(tmp_path / "val", "v", [("dog", "polygon", square, None, {})])
    config = DetectionConfig(
        train_annotations=f"labelme:{tmp_path / 'train'}",
        val_annotations=f"labelme:{tmp_path / 'val'}",
        model_dir=str(tmp_path / "run"),
    )
    train, val = _sources(config)
    assert train.class_names == val.class_names == ("cat", "dog")
    assert (tmp_path / "run" / "labelme_val.json").is_file()
    with pytest.raises(ValueError, match="go together"):
        _sources(DetectionConfig(train_annotations=f"labelme:{tmp_path / 'train'}"))
