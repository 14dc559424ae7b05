"""The converted ``maskrcnn_resnet50_fpn`` and ``_v2`` give torchvision's detections on every
backend (``-m slow``).

``pip install -e ".[test-torch]"`` (or a newer PyTorch and torchvision; scikit-image for the
photos). The
comparison runs in a subprocess because PyTorch must be imported before TensorFlow in one
process.
"""

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.backend import child_env

SCRIPT = Path(__file__).with_name("equivalence.py")
ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.slow
@pytest.mark.torch("torchvision", "skimage")  # test-time references (scikit-image's photos)
@pytest.mark.parametrize(
    "backend, titles",
    [
        ("tensorflow", ("detect_summary", "summary", "litert_summary")),
        ("jax", ("detect_summary",)),
        ("torch", ("detect_summary",)),
    ],
)
@pytest.mark.parametrize("model", ["maskrcnn_resnet50_fpn", "maskrcnn_resnet50_fpn_v2"])
def test_the_converted_model_gives_torchvisions_detections(model, backend, titles, tmp_path):
    """``detect`` on each backend; on TensorFlow also the SavedModel and the LiteRT export."""
    if importlib.util.find_spec(backend) is None:
        pytest.skip(f"{backend} is not installed")
    flags = ["--litert", f"--model={model}"]
    onnx = backend == "tensorflow" and all(
        importlib.util.find_spec(m) for m in ("tf2onnx", "onnx", "onnxruntime")
    )
    if onnx:  # the ONNX export too, where its tools are installed
        flags.append("--onnx")
        titles = (*titles, "onnx_summary")
    env = child_env(backend)
    result = subprocess.run(
        [sys.executable, str(SCRIPT), f"--workdir={tmp_path}", *flags],
        capture_output=True,
        text=True,
        timeout=1800,
        env=env,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    for title in titles:
        summary = next(
            line for line in result.stdout.splitlines() if line.startswith(f"{title} matched_share")
        )
        value = lambda key, line=summary: float(re.search(rf" {key}=(\S+)", line)[1])  # noqa: E731
        assert value("matched_share") == 1.0, result.stdout
        assert value("torchvision") > 300, summary  # detections on six photos
        assert value("max_box_diff") <= 0.05, summary  # pixels
        assert value("max_score_diff") <= 1e-3, summary
        assert value("max_mask_pixels_differing") <= 1e-3, summary
        assert value("paste_box_flips") <= 0.01 * value("matched"), summary
