"""The Mask R-CNN scripts end to end at smoke sizes: generated shapes data -> train -> COCOeval
-> model.keras + SavedModel -> eval script; flag and data errors are one line."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from lambda_keras.training.detection import DetectionConfig, prepare_data
from tests.script_flags import assert_refused, case_ids, load_script, parse

eval_maskrcnn = load_script("eval_maskrcnn")
train_maskrcnn = load_script("train_maskrcnn")

pytestmark = pytest.mark.end_to_end

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import bench_detection_job as DETECTION_JOB  # noqa: E402, N812

sys.path.remove(str(ROOT / "benchmarks"))
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONPATH": str(ROOT)}


def run(script, *args, timeout=900):
    return subprocess.run(
        [sys.executable, str(ROOT / "scripts" / script), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=ENV,
    )


def shapes_flags(data: Path) -> list[str]:
    return [f"--{name}={path}" for name, path in shapes_paths(data).items()]


def shapes_paths(data: Path) -> dict[str, str]:
    """The four data flags of a small COCO-format shapes set in ``data``, written there unless
    it already holds it (a copy of it too, damaged files and all)."""
    from lambda_keras.training.detection.datasets.shapes import write_shapes_dataset

    paths = write_shapes_dataset(data, num_train=8, num_val=6, image_size=64)
    return {name: str(path) for name, path in paths.items()}


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A smoke run on a small COCO-format set given by the four data flags, as a user's own
    (the generated default set is 360 images: its writing and scoring are not what is tested)."""
    folder = tmp_path_factory.mktemp("maskrcnn")
    result = run(
        "train_maskrcnn.py",
        f"--model_dir={folder / 'run'}",
        *shapes_flags(folder / "data"),
        "--steps=2",
        "--steps_per_epoch=1",
        "--image_size=64",
        "--batch_size=2",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return folder, result.stdout


def test_train_prints_cocoeval_and_exports(trained):
    folder, stdout = trained
    assert "COCOeval bbox" in stdout or "no detections" in stdout
    assert "box AP" in stdout and "mask AP" in stdout
    # What benchmarks/bench_detection_job.py reads for the documentation's table.
    assert DETECTION_JOB.FINAL.search(stdout) and DETECTION_JOB.AP50.search(stdout), stdout
    assert (folder / "run" / "model.keras").is_file()
    labels = json.loads((folder / "run" / "labels.json").read_text())
    assert labels == {
        "category_ids": [1, 3, 7],
        "class_names": ["rectangle", "ellipse", "triangle"],
    }
    assert len((folder / "run" / "log.csv").read_text().splitlines()) == 3  # header + 2 epochs


def test_saved_model_takes_a_uint8_image_of_any_size(trained):
    folder, _ = trained
    serve = tf.saved_model.load(str(folder / "run" / "saved_model")).signatures["serving_default"]
    image = np.random.default_rng(0).integers(0, 255, (50, 70, 3)).astype(np.uint8)
    out = serve(image=tf.constant(image))
    assert out["masks"].shape[1:] == (50, 70) and out["masks"].dtype == tf.uint8
    n = int(out["num_detections"])
    boxes = out["boxes"].numpy()[:n]
    assert ((boxes >= 0) & (boxes <= [50, 70, 50, 70])).all()


def test_eval_script_scores_the_saved_model(trained):
    folder, _ = trained
    result = run(
        "eval_maskrcnn.py",
        f"--model_path={folder / 'run' / 'model.keras'}",
        f"--annotations={folder / 'data' / 'val.json'}",
        f"--images={folder / 'data' / 'val'}",
        "--image_size=64",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "box AP" in result.stdout.splitlines()[-1]


def test_bad_flags_and_data_are_one_line_from_the_scripts(tmp_path):
    """The scripts' wiring: a data mistake is one ``error:`` line (exit 2), no traceback. The
    flag validators are absl's (one line, exit 1) on the scripts' own flag values, parsed in
    process below; each data mistake is tested in ``tests/detection/test_bad_input.py``."""
    result = run("train_maskrcnn.py", f"--train_annotations={tmp_path / 'x.json'}", timeout=120)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "go together" in result.stderr.strip().splitlines()[-1]
    result = run("eval_maskrcnn.py", f"--model_path={tmp_path / 'none.keras'}", timeout=120)
    assert result.returncode == 2 and "no such file" in result.stderr


FLAG_CASES = [
    (train_maskrcnn, "--image_size=100", "--image_size must be a multiple of 64"),
    (train_maskrcnn, "--image_size=0", "--image_size must be a positive integer"),
    (train_maskrcnn, "--depth=51", "--depth must be one of 50, 101"),
    (train_maskrcnn, "--steps=0", "--steps must be a positive integer"),
    (train_maskrcnn, "--max_instances=0", "--max_instances must be a positive integer"),
    (train_maskrcnn, "--width_multiplier=0", "--width_multiplier must be a positive number"),
    (train_maskrcnn, "--recipe=coco", "value should be one of"),
    (eval_maskrcnn, "--image_size=96", "--image_size must be a multiple of 64"),
    (eval_maskrcnn, "--batch_size=0", "--batch_size must be a positive integer"),
]


@pytest.mark.parametrize(
    "script, flag, message",
    FLAG_CASES,
    ids=case_ids(FLAG_CASES),
)
def test_bad_flags(script, flag, message):
    assert_refused(script, flag, message)


def test_unset_sizes_take_the_recipe_defaults():
    flag_values = parse(train_maskrcnn)
    assert flag_values.image_size is None and flag_values.batch_size is None


def shapes_config(data, **kwargs) -> DetectionConfig:
    return DetectionConfig(**shapes_paths(data), **kwargs)


def test_a_damaged_image_is_an_error_naming_it(trained, tmp_path):
    import shutil

    data = tmp_path / "data"
    shutil.copytree(trained[0] / "data", data)
    image = data / "val" / json.loads((data / "val.json").read_text())["images"][0]["file_name"]
    image.write_bytes(image.read_bytes()[:100])  # cut short
    with pytest.raises(ValueError, match="1 image file\\(s\\) are damaged") as caught:
        prepare_data(shapes_config(data, model_dir=str(tmp_path / "run")))
    assert str(image) in str(caught.value)
    assert not (tmp_path / "run" / "model.keras").exists()


def test_resuming_with_other_settings_is_an_error_and_keeps_the_backup(trained, tmp_path):
    import shutil

    folder, _ = trained
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    shutil.copy(folder / "run" / "run_settings.json", run_dir)  # written by the real run
    (run_dir / "backup").mkdir()  # as a killed run leaves it
    (run_dir / "backup" / "latest.weights.h5").write_bytes(b"the last epoch")
    config = shapes_config(
        folder / "data",
        model_dir=str(run_dir),
        batch_size=2,
        steps=2,
        steps_per_epoch=1,
        image_size=128,
    )
    with pytest.raises(ValueError, match="--image_size=64 there, 128 now") as caught:
        prepare_data(config)
    assert "there" not in str(caught.value).replace("64 there", "")  # only what differs
    assert (run_dir / "backup" / "latest.weights.h5").read_bytes() == b"the last epoch"


@pytest.mark.slow
def test_default_shapes_run_reaches_the_readme_accuracy(tmp_path):
    """The README's default command (about 18 minutes on 2 cores)."""
    result = run(
        "train_maskrcnn.py",
        f"--model_dir={tmp_path / 'run'}",
        f"--shapes_dir={tmp_path / 'data'}",
        "--noexport",
        timeout=3600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    found = re.search(r"box AP ([\d.]+), mask AP ([\d.]+) ", result.stdout)
    assert found, result.stdout[-2000:]
    assert float(found[1]) >= 0.5 and float(found[2]) >= 0.4, found[0]


@pytest.mark.slow  # a full-width ResNet-50 Mask R-CNN: about a minute
def test_finetune_from_a_converted_coco_model(tmp_path):
    from lambda_keras.detection import maskrcnn_resnet50_fpn

    coco = maskrcnn_resnet50_fpn()  # random weights standing in for the converted COCO file
    weights = str(tmp_path / "coco.weights.h5")
    coco.save_weights(weights)
    result = run(
        "train_maskrcnn.py",
        f"--model_dir={tmp_path / 'run'}",
        *shapes_flags(tmp_path / "data"),
        "--backbone=torchvision_resnet",
        "--width_multiplier=1.0",
        f"--weights={weights}",
        "--recipe=finetune",
        "--steps=2",
        "--steps_per_epoch=1",
        "--image_size=64",
        "--batch_size=2",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "box AP" in result.stdout.splitlines()[-1]
    labels = json.loads((tmp_path / "run" / "labels.json").read_text())
    served = tf.saved_model.load(str(tmp_path / "run" / "saved_model"))
    out = served.signatures["serving_default"](image=tf.zeros((50, 70, 3), tf.uint8))
    assert out["masks"].shape[1:] == (50, 70)
    assert len(labels["category_ids"]) == 3
