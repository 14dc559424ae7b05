"""Every benchmark script refuses a bad argument in one line (argparse, exit 2) before it builds
or times anything."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

CASES = [
    ("accelerator", "--stages=speed", "--stages", "'speed' is not one of layers, train"),
    ("accelerator", "--budget=0", "--budget", "positive integer"),
    ("bench_backbones", "--size=0", "--size", "positive integer"),
    ("bench_backbones", "--batch=-1", "--batch", "positive integer"),
    ("bench_backbones", "--repeats=two", "--repeats", "'two'"),
    ("bench_backbones", "--models=vgg16", "--models", "'vgg16' is not one of lambda_resnet<depth>"),
    ("bench_backbones", "--models=resnet_rs51", "--models", "'resnet_rs51'"),
    ("bench_backbones", "--onednn=maybe", "--onednn", "'maybe' is not one of on, off"),
    ("bench_build", "--models=vgg16", "--models", "'vgg16' is not one of maskrcnn_resnet50_fpn"),
    ("bench_build", "--backends=mxnet", "--backends", "'mxnet' is not one of tensorflow"),
    ("bench_build", "--repeats=0", "--repeats", "positive integer"),
    ("bench_detection", "--sizes=500", "--sizes", "multiples of 64"),
    ("bench_detection", "--sizes=512,", "--sizes", "comma-separated"),
    ("bench_detection", "--models=resnet50", "--models", "'resnet50' is not one of"),
    ("bench_detection", "--batch=0", "--batch", "positive integer"),
    ("bench_detection", "--repeats=1.5", "--repeats", "'1.5'"),
    ("bench_detection_stages", "--backends=mxnet", "--backends", "'mxnet' is not one of"),
    ("bench_detection_stages", "--threads=0", "--threads", "positive integer"),
    ("bench_detection_ops", "--boxes=0", "--boxes", "comma-separated multiples of 1"),
    ("bench_detection_ops", "--backends=mxnet", "--backends", "'mxnet' is not one of"),
    ("bench_layers", "--batch=0", "--batch", "positive integer"),
    ("bench_layers", "--repeats=-3", "--repeats", "positive integer"),
    ("bench_layers", "--backends=mxnet", "--backends", "'mxnet' is not one of"),
    ("bench_layers", "--implementations=fast", "--implementations", "'fast' is not one of"),
    ("bench_train", "--steps=0", "--steps", "positive integer"),
    ("bench_train", "--batch=x", "--batch", "'x'"),
    ("bench_train", "--size=0", "--size", "positive integer"),
    ("bench_train", "--backends=mxnet", "--backends", "invalid choice: 'mxnet'"),
    ("bench_torch_steps", "--batch=0", "--batch", "positive integer"),
    ("bench_torch_steps", "--systems=jit", "--systems", "invalid choice: 'jit'"),
    ("bench_torch_steps", "--policy=float64", "--policy", "invalid choice: 'float64'"),
    ("bench_layer_ops", "--size=0", "--size", "positive integer"),
    ("bench_layer_ops", "--channels=-1", "--channels", "positive integer"),
    ("bench_main_job", "--epochs=0", "--epochs", "positive integer"),
    ("bench_xla_flags", "--flags=fast", "--flags", "'fast' is not one of none, ynn"),
    ("bench_xla_flags", "--detection-sizes=100", "--detection-sizes", "multiples of 64"),
    ("bench_xla_flags", "--models=vgg16", "--models", "'vgg16' is not one of"),
    ("bench_timm_ports", "--implementations=fast", "--implementations", "'fast' is not one of"),
    ("bench_timm_ports", "--threads=0", "--threads", "positive integer"),
    ("bench_timm_ports", "--models=lambda_resnet99", "--models", "'lambda_resnet99'"),
]


SCRIPTS = sorted({case[0] for case in CASES})


@pytest.mark.parametrize(
    "script",
    [  # bench_timm_ports imports torch and timm
        pytest.param(s, marks=pytest.mark.torch("timm")) if s == "bench_timm_ports" else s
        for s in SCRIPTS
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(script):
    """Each case runs the script as ``__main__`` (argparse's exit, no traceback), all of one
    script's cases in one process: the script imports TensorFlow once, not once per case."""
    cases = [case for case in CASES if case[0] == script]
    result = subprocess.run(
        [
            sys.executable,
            str(Path(__file__).with_name("run_as_main.py")),
            str(ROOT / "benchmarks" / f"{script}.py"),
            json.dumps([[argument] for _, argument, _, _ in cases]),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={
            **os.environ,
            "TF_CPP_MIN_LOG_LEVEL": "3",
            "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'benchmarks'}",
        },
    )
    assert result.returncode == 0, result.stderr[-2000:]
    runs = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert len(runs) == len(cases), result.stdout[-2000:]
    for (_, argument, flag, message), run in zip(cases, runs, strict=True):
        assert run["status"] == 2, (argument, run["stderr"][-2000:])
        error = [line for line in run["stderr"].splitlines() if "error:" in line]
        assert len(error) == 1, (argument, error)
        assert f"argument {flag}" in error[0] and message in error[0], (argument, error)
        assert "Traceback" not in run["stderr"], argument
        assert "|" not in run["stdout"], argument  # no table row: nothing was measured
