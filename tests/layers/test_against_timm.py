"""LambdaLayer equals timm's PyTorch LambdaLayer given the same weights (an independent port).

timm is not a dependency: ``pip install torch==2.14.1 torchvision==0.29.1 timm``. The comparison
runs in a subprocess because PyTorch must be imported before TensorFlow in one process.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("timm_comparison.py")
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.torch("timm")
def test_matches_timm_lambda_layer():
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "2"}
    result = subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=600, env=env
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = [line for line in result.stdout.splitlines() if line.startswith("config=")]
    assert len(lines) == 3
    for line in lines:
        scale = float(re.search(r"scale=(\S+)", line)[1])
        diffs = dict(re.findall(r"(einsum|conv|depthwise)=(\S+)", line))
        assert set(diffs) == {"einsum", "conv", "depthwise"}
        for diff in diffs.values():
            assert float(diff) <= 1e-5 * max(1.0, scale), line
