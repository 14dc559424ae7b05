"""timm's checkpoints (LambdaResNet ports, ResNet-RS), loaded through the weights registry
(``weights="imagenet"``, from a local Hub), give timm's logits (``-m slow``).

``pip install torch==2.14.1 torchvision==0.29.1 timm``. The comparison runs in a subprocess
because PyTorch must be imported before TensorFlow in one process.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("timm_equivalence.py")
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.torch("timm")
@pytest.mark.parametrize(
    "name",
    ["lambda_resnet26t", "lambda_resnet26rpt_256", "lambda_resnet50ts"]
    + [f"resnet_rs{depth}" for depth in (50, 101, 152, 200, 270, 350, 420)],
)
def test_converted_model_gives_timms_logits(name):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "2"}
    result = subprocess.run(
        [sys.executable, str(SCRIPT), f"--models={name}"],
        capture_output=True,
        text=True,
        timeout=1800,
        env=env,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    line = next(line for line in result.stdout.splitlines() if line.startswith(f"model={name} "))
    diff = float(re.search(r"max_abs_diff=(\S+)", line)[1])
    assert diff <= 1e-4, line
    assert "top5_equal=True" in line, line
