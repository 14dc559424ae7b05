"""Every benchmark script refuses a bad argument in one line (argparse, exit 2) before it builds
or times anything."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HAVE_TIMM = all(importlib.util.find_spec(m) for m in ("timm", "torch"))

CASES = [
    ("bench_backbones", "--size=0", "--size", "positive integer"),
    ("bench_backbones", "--batch=-1", "--batch", "positive integer"),
    ("bench_backbones", "--repeats=two", "--repeats", "'two'"),
    ("bench_backbones", "--models=vgg16", "--models", "'vgg16' is not one of lambda_resnet<depth>"),
    ("bench_backbones", "--models=resnet_rs51", "--models", "'resnet_rs51'"),
    ("bench_detection", "--sizes=500", "--sizes", "multiples of 64"),
    ("bench_detection", "--sizes=512,", "--sizes", "comma-separated"),
    ("bench_detection", "--backbones=resnet50", "--backbones", "'resnet50' is not one of"),
    ("bench_detection", "--batch=0", "--batch", "positive integer"),
    ("bench_detection", "--repeats=1.5", "--repeats", "'1.5'"),
    ("bench_layers", "--batch=0", "--batch", "positive integer"),
    ("bench_layers", "--repeats=-3", "--repeats", "positive integer"),
    ("bench_layers", "--backend=mxnet", "--backend", "invalid choice: 'mxnet'"),
    ("bench_train", "--steps=0", "--steps", "positive integer"),
    ("bench_train", "--batch=x", "--batch", "'x'"),
    ("bench_main_job", "--epochs=0", "--epochs", "positive integer"),
    ("bench_timm_ports", "--implementations=fast", "--implementations", "'fast' is not one of"),
    ("bench_timm_ports", "--threads=0", "--threads", "positive integer"),
    ("bench_timm_ports", "--models=lambda_resnet99", "--models", "'lambda_resnet99'"),
]


@pytest.mark.parametrize(
    "script, argument, flag, message", CASES, ids=[f"{c[0]}{c[1]}" for c in CASES]
)
def test_bad_argument_is_one_line_and_exit_2(script, argument, flag, message):
    if script == "bench_timm_ports" and not HAVE_TIMM:
        pytest.skip("bench_timm_ports imports torch and timm")
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / f"{script}.py"), argument],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": str(ROOT)},
    )
    assert result.returncode == 2, result.stderr[-2000:]
    error = [line for line in result.stderr.splitlines() if "error:" in line]
    assert len(error) == 1 and f"argument {flag}" in error[0] and message in error[0], error
    assert "Traceback" not in result.stderr
    assert "|" not in result.stdout  # no table row: nothing was measured
