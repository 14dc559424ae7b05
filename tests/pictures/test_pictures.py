"""The scripts that draw the documentation's pictures run, and show what the pages say."""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from lambda_keras.detection import MaskRCNN
from lambda_keras.training.detection.datasets.shapes import CATEGORIES, write_shapes_dataset
from tests.detection.tiny import TINY_HEADS, tiny_backbone

PICTURES = Path(__file__).resolve().parents[2] / "pictures"


def script(name: str):
    spec = importlib.util.spec_from_file_location(name, PICTURES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.tensorflow  # the script takes TensorFlow's gradient of the layer
def test_the_local_influence_ends_at_its_scope_and_the_global_one_does_not(tmp_path):
    influence_maps = script("influence_maps")
    centre, half = influence_maps.SIDE // 2, 7 // 2
    local = influence_maps.influence(7)
    window = local[centre - half : centre + half + 1, centre - half : centre + half + 1]
    assert window.min() > 0 and local.sum() == pytest.approx(window.sum())
    global_ = influence_maps.influence(None)
    assert global_[0, 0] > 0 and global_[-1, -1] > 0
    output = tmp_path / "influence.png"
    influence_maps.main([f"--output={output}"])
    assert output.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.end_to_end
def test_the_detections_picture_draws_a_saved_run(tmp_path):
    model_dir, data = tmp_path / "run", tmp_path / "shapes"
    model_dir.mkdir()
    write_shapes_dataset(data, num_train=1, num_val=2, image_size=64)
    model = MaskRCNN(tiny_backbone(), num_classes=3, **TINY_HEADS)
    model.predict(np.zeros((1, 64, 64, 3), "float32"), verbose=0)
    model.save(model_dir / "model.keras")
    names = [category["name"] for category in CATEGORIES]
    (model_dir / "labels.json").write_text(json.dumps({"class_names": names}))
    output = tmp_path / "detections.png"
    script("detections").main(
        [f"--model_dir={model_dir}", f"--shapes_dir={data}", "--count=2", "--image_size=64"]
        + ["--threshold=0", f"--output={output}"]
    )
    assert output.read_bytes()[:4] == b"\x89PNG"
