"""lambda_keras.detection.ops against torchvision's ops (an independent implementation).

torchvision is not a dependency: ``pip install torch==2.14.1 torchvision==0.29.1``. The
comparison runs in a subprocess (PyTorch must be imported before TensorFlow), once per Keras
backend.
"""

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.backend import child_env

SCRIPT = Path(__file__).with_name("torchvision_comparison.py")
ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.slow
@pytest.mark.torch("torchvision")
@pytest.mark.parametrize("backend", ["tensorflow", "jax", "torch"])
def test_ops_match_torchvision(backend):
    if importlib.util.find_spec(backend) is None:
        pytest.skip(f"{backend} is not installed")
    env = child_env(backend)
    result = subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=600, env=env
    )
    assert result.returncode == 0, result.stderr[-3000:]
    diffs = dict(re.findall(r"^(\S+) max_diff=(\S+)$", result.stdout, re.M))
    equal = dict(re.findall(r"^(\S+) equal=(\S+)$", result.stdout, re.M))
    assert set(diffs) == {
        "roi_align_aligned=True",
        "roi_align_aligned=False",
        "roi_align_adaptive_aligned=True",
        "roi_align_adaptive_aligned=False",
        "box_iou",
        "paste_masks",
        "encode_boxes",
        "paste_masks_torchvision",
        "torchvision_anchors",
        "roi_align_valid_sizes",
    }, result.stdout
    assert all(float(d) <= 1e-5 for d in diffs.values()), result.stdout
    assert equal == {
        "nms": "True",
        "batched_nms": "True",
        "nms_threshold": "True",
        "batched_nms_threshold": "True",
        "nms_non_finite": "True",
        "batched_nms_non_finite": "True",
    }, result.stdout
