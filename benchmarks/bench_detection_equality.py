"""The converted torchvision Mask R-CNN against torchvision's own, on every route, as a table.

Runs ``tests/detection/torchvision/equivalence.py`` (torchvision builds the model at random with
a fixed seed; its state dict is converted and both detect on six real photos: landscape,
upright, square) once per model and Keras backend, each in its own process: ``detect`` on
TensorFlow, JAX and PyTorch, and on TensorFlow the SavedModel, the LiteRT flatbuffer and, where
tf2onnx and onnxruntime are installed, the ONNX file. Each row is one route's summary line:
detections on both sides and matched (same class, box IoU >= 0.9), the largest box and score
differences of a matched pair, and the mask pixels that differ in the worst matched detection.

Needs the references the equality tests need (``pip install torch==2.14.1 torchvision==0.29.1
scikit-image``):

    python benchmarks/bench_detection_equality.py \\
        --output=benchmarks/results/detection_equality.json
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import subprocess
import sys
import tempfile

from arguments import names
from children import child_env
from results import Table, add_output_argument, write

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "tests", "detection", "torchvision", "equivalence.py")
BACKENDS = ("tensorflow", "jax", "torch")
MODELS = ("maskrcnn_resnet50_fpn", "maskrcnn_resnet50_fpn_v2")
ROUTES = {  # the script's summary titles, in the table's order
    "detect_summary": "detect",
    "summary": "SavedModel",
    "litert_summary": "LiteRT (tf.lite.Interpreter)",
    "onnx_summary": "ONNX (onnxruntime)",
}
SUMMARY = re.compile(r"^(\w+) matched_share=\S+ (.*)$")


def summaries(stdout: str) -> dict[str, dict[str, float]]:
    """``{title: {key: value}}`` of the script's summary lines."""
    found = {}
    for line in stdout.splitlines():
        match = SUMMARY.match(line)
        if match and match[1] in ROUTES:
            pairs = (item.split("=", 1) for item in match[2].split())
            found[match[1]] = {key: float(value) for key, value in pairs}
    return found


def run(model: str, backend: str, threads: int) -> dict[str, dict[str, float]]:
    flags = [f"--model={model}"]
    if backend == "tensorflow":
        flags.append("--litert")
        if all(importlib.util.find_spec(m) for m in ("tf2onnx", "onnx", "onnxruntime")):
            flags.append("--onnx")
    print(f"comparing {model} on {backend} ...", file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory() as workdir:
        done = subprocess.run(
            [sys.executable, SCRIPT, f"--workdir={workdir}", *flags],
            capture_output=True,
            text=True,
            env=child_env(backend, threads),
            cwd=ROOT,
            check=False,
        )
    if done.returncode != 0:
        raise RuntimeError(f"{model} on {backend} failed:\n{done.stderr[-3000:]}")
    return summaries(done.stdout)


def add_rows(table: Table, model: str, backend: str, found: dict) -> None:
    for title, route in ROUTES.items():
        if title not in found:
            continue
        s = found[title]
        table.add(
            model,
            f"{route}, {backend}" if title == "detect_summary" else route,
            int(s["torchvision"]),
            int(s["keras"]),
            int(s["matched"]),
            s["max_box_diff"],
            s["max_score_diff"],
            100 * s["max_mask_pixels_differing"],
        )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="Runs for several minutes per model and backend on a CPU.",
    )
    parser.add_argument("--models", type=names(MODELS), default=list(MODELS))
    parser.add_argument("--backends", type=names(BACKENDS), default=list(BACKENDS))
    parser.add_argument("--threads", type=int, default=2)
    add_output_argument(parser)
    args = parser.parse_args(argv)
    missing = [m for m in ("torch", "torchvision", "skimage") if not importlib.util.find_spec(m)]
    if missing:
        parser.error(f"needs {', '.join(missing)} (the references of the equality tests)")
    table = Table(
        "equality",
        "The converted model against torchvision's on six photos: detections, matched pairs "
        "(same class, box IoU >= 0.9) and their largest differences",
        [
            "model",
            "route",
            "torchvision detections",
            "lambda_keras detections",
            "matched",
            "largest box difference (px)",
            "largest score difference",
            "mask pixels differing, worst detection (%)",
        ],
        digits=[0, 0, 0, 0, 0, 4, 6, 4],
        labels=2,
        plot="none",
    )
    table.print_header()
    for model in args.models:
        for backend in args.backends:
            add_rows(table, model, backend, run(model, backend, args.threads))
    write(args.output, "bench_detection_equality", [table], threads=args.threads)


if __name__ == "__main__":
    main()
