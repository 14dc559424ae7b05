"""The stage profile of Mask R-CNN: the Keras stages, compiled as the backend compiles, chain
into the model's own detections; torchvision's clock gives every stage of a call; the whole
script writes a row per stage on every backend (slow)."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.backend import child_env

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "bench_detection_stages.py"


@pytest.fixture(scope="module")
def stages():
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import bench_detection_stages
    finally:
        sys.path.remove(str(SCRIPT.parent))
    return bench_detection_stages


@pytest.mark.end_to_end  # the script's stages compiled on three shapes
@pytest.mark.parametrize("shape", [(60, 100), (100, 60), (70, 70)])  # landscape, upright, square
def test_the_compiled_stages_give_the_model_s_detections(stages, shape):
    from lambda_keras.detection import (
        MaskRCNN,
        TorchvisionAnchors,
        TorchvisionTransform,
        detect,
    )
    from tests.detection.tiny import TINY_HEADS, tiny_valid_backbone

    model = MaskRCNN(
        tiny_valid_backbone(),
        num_classes=3,
        transform=TorchvisionTransform(min_size=64, max_size=200),
        anchor_generator=TorchvisionAnchors(),
        **{**TINY_HEADS, "max_detections": 5, "score_threshold": 0.0},
    )
    photo = np.random.default_rng(2).integers(0, 256, (*shape, 3), dtype="uint8")
    expected = detect(model, photo)
    functions = {
        stage: stages.compiled(model, fn)
        for stage, fn in stages.keras_stage_functions(model).items()
    }
    assert list(functions) == list(stages.STAGES[1:-1])
    seconds, found = stages.keras_photo_stages(model, functions, photo)
    assert list(seconds) == list(stages.STAGES) and all(s > 0 for s in seconds.values())
    assert int(found["num_detections"]) == int(expected["num_detections"]) > 0
    for key in ("boxes", "scores"):
        np.testing.assert_allclose(found[key], expected[key], rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(found["classes"], expected["classes"])
    np.testing.assert_array_equal(found["masks"], expected["masks"])


@pytest.mark.torch("torchvision")  # skipped in the quick tier, run by CI's second stage
def test_torchvision_s_clock_times_every_stage_of_one_call(stages):
    import torch
    import torchvision

    torch.manual_seed(0)
    model = torchvision.models.detection.maskrcnn_resnet50_fpn(
        weights=None, weights_backbone=None, num_classes=3, min_size=64, max_size=96
    ).eval()
    clock = stages.TorchvisionClock(model)
    image = torch.rand(3, 60, 90)
    for _ in range(2):  # the second call's stages replace the first's
        start = stages.time.perf_counter()
        with torch.inference_mode():
            found = model([image])[0]
        whole = stages.time.perf_counter() - start
        seconds = clock.stages()
        assert list(seconds) == list(stages.STAGES)
        assert all(s > 0 for s in seconds.values()), seconds
        assert sum(seconds.values()) <= whole  # disjoint parts of that one call
    assert len(found["boxes"]) > 0  # the mask head and the pasting ran on detections


def test_medians_are_per_stage(stages):
    runs = [{"a": 1.0, "b": 5.0}, {"a": 3.0, "b": 4.0}, {"a": 2.0, "b": 9.0}]
    assert stages.medians(runs) == {"a": 2.0, "b": 5.0}


@pytest.mark.slow
def test_bench_detection_stages_writes_every_stage(tmp_path):
    output = tmp_path / "stages.json"
    command = [sys.executable, str(SCRIPT), "--backends=tensorflow,jax", "--repeats=1"]
    command.append(f"--output={output}")
    result = subprocess.run(command, capture_output=True, text=True, timeout=3000, env=child_env())
    assert result.returncode == 0, result.stderr[-2000:]
    table = json.loads(output.read_text())["tables"]["stages"]
    assert table["columns"] == ["photo", "stage", "torchvision", "tensorflow", "jax"]
    labels = [tuple(row[:2]) for row in table["rows"]]
    assert labels[:3] == [("china", "preprocess"), ("china", "backbone"), ("china", "FPN")]
    assert ("china, square", "detections") in labels
    assert all(cell > 0 for row in table["rows"] for cell in row[2:]), table["rows"]
