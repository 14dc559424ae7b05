"""The converted ``maskrcnn_resnet50_fpn`` gives torchvision's detections on every backend
(``-m slow``).

``pip install torch==2.14.1 torchvision==0.29.1 scikit-image``. The comparison runs in a
subprocess because PyTorch must be imported before TensorFlow in one process.
"""

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.backend import child_env

SCRIPT = Path(__file__).with_name("equivalence.py")
ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.slow
@pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("torchvision", "skimage")),
    reason="torchvision and scikit-image are test-time references installed by hand",
)
@pytest.mark.parametrize(
    "backend, titles",
    [
        ("tensorflow", ("detect_summary", "summary", "litert_summary")),
        ("jax", ("detect_summary",)),
        ("torch", ("detect_summary",)),
    ],
)
def test_the_converted_model_gives_torchvisions_detections(backend, titles, tmp_path):
    """``detect`` on each backend; on TensorFlow also the SavedModel and the LiteRT export."""
    if importlib.util.find_spec(backend) is None:
        pytest.skip(f"{backend} is not installed")
    flags = ["--litert"]
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


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("torchvision") is None, reason="torchvision is not installed"
)
def test_coco_weights_are_downloaded_checked_converted_and_cached(tmp_path, monkeypatch):
    """``weights="coco"``'s path through the weights registry, from a local URL (no download
    in tests): a checkpoint whose name carries its SHA-256 prefix, as torchvision's does,
    registered as the COCO spec is; cached under ``$KERAS_HOME``."""
    code = (
        "import hashlib, os, sys, torch, torchvision\n"
        "m = torchvision.models.detection.maskrcnn_resnet50_fpn(weights=None,"
        " weights_backbone=None)\n"
        "path = os.path.join(sys.argv[1], 'tmp.pth')\n"
        "torch.save(m.state_dict(), path)\n"
        "digest = hashlib.sha256(open(path, 'rb').read()).hexdigest()[:8]\n"
        "os.rename(path, os.path.join(sys.argv[1], f'maskrcnn_coco-{digest}.pth'))\n"
    )
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True, timeout=600)
    (checkpoint,) = tmp_path.glob("maskrcnn_coco-*.pth")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras_home"))
    script = (
        "import dataclasses, os, sys\n"
        "from lambda_keras.detection.torchvision import mask_rcnn\n"
        "from lambda_keras.zoo import weights\n"
        "spec = dataclasses.replace(mask_rcnn.COCO_WEIGHTS, name='local_coco', url=sys.argv[1],"
        " sha256=sys.argv[2], aliases=())\n"
        "weights.register_weights(spec)\n"
        "model = mask_rcnn.maskrcnn_resnet50_fpn(weights='local_coco')\n"
        "print(float(model.box_head.fc1.kernel.numpy().std()))\n"
        "print(os.path.join(weights._keras_cache(), 'local_coco.weights.h5'))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "2"}
    url, prefix = checkpoint.as_uri(), checkpoint.stem.rsplit("-", 1)[1]
    run = [sys.executable, "-c", script, url, prefix]
    first = subprocess.run(run, capture_output=True, text=True, env=env, timeout=900)
    assert first.returncode == 0, first.stderr[-3000:]
    std, converted = first.stdout.strip().splitlines()[-2:]
    assert converted.startswith(str(tmp_path / "keras_home")) and os.path.isfile(converted)
    assert not (tmp_path / "home" / ".keras").exists()  # KERAS_HOME is the one cache
    # A file that is not the one its prefix names is refused and removed.
    bad = subprocess.run(
        [sys.executable, "-c", script.replace("local_coco", "other"), url, "00000000"],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert bad.returncode != 0 and "Checksum mismatch" in bad.stderr
    assert not (tmp_path / "keras_home" / "lambda_keras" / "other.pth").exists()
    checkpoint.unlink()  # the cache answers now: no second download or conversion
    again = subprocess.run(run, capture_output=True, text=True, env=env, timeout=900)
    assert again.returncode == 0, again.stderr[-3000:]
    assert again.stdout.strip().splitlines()[-2:] == [std, converted]
