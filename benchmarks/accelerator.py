"""The accelerator suite in one command: layers, classifiers and Mask R-CNN on the machine's
GPU or TPU, every backend installed, results files that name the device.

Runs where TensorFlow is not installed (GPU images ship JAX and PyTorch without it): neither
this process nor any JAX or PyTorch column imports it, and TensorFlow columns come only where it
is installed. Bounded to 8 minutes on one H100 by default (``--budget=480`` seconds, JIT
compiles included): each stage gets a share of the budget less a minute's grace per stage; the
training stage starts no row after its share and its results file names the rows it left out;
every stage writes its results file as it goes, and a stage still running when its grace is
over is stopped and ``summary.json`` says so (with every process it started). The shares are a
first guess until a GPU run sets them (the project's first GPU run, one H100, 2026-11-26, ran an
earlier version). Each stage is one of the project's benchmark scripts, each backend in its own
process, written to ``--output-dir``:

1. ``layers.json``: ``bench_layers.py --quick`` (the lambda layer at the paper's c4 and c5
   shapes, every implementation, and ``auto``'s choice against the fastest, per backend).
2. ``train.json``: ``bench_train.py``: the port of timm's LambdaResNet-50 (``lambda_resnet50ts``),
   keras' ResNet50, ResNet-RS-50 and the paper's LambdaResNet-50, training and inference
   images/s and the first step's seconds (its compiles), at batch 64 and 256 px in mixed
   bfloat16, on each backend, with timm's own ``lambda_resnet50ts`` and ``resnet50`` as the
   reference rows (eager PyTorch, bfloat16 autocast, channels_last convolutions).
3. ``detection.json``: ``bench_detection.py``: the converted ``maskrcnn_resnet50_fpn`` against
   torchvision on the same device (inference on two photos, one training step).

``summary.json`` lists each stage's command, seconds and whether it finished. ``--tiny`` runs
the same stages at tiny sizes, float32 only, on a CPU (the tests), with ``lambda_resnet50ts``
alone in the training stage.

    python benchmarks/accelerator.py --output-dir=benchmarks/results/accelerator/h100
    python benchmarks/accelerator.py --tiny --backends=jax,torch --output-dir=/tmp/suite
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from arguments import add_backends_argument, names, positive_int
from results import device_name

HERE = Path(__file__).resolve().parent
BACKENDS = ("tensorflow", "jax", "torch")
STAGES = ("layers", "train", "detection")
SHARES = {"layers": 0.2, "train": 0.55, "detection": 0.25}  # of --budget, in this order
GRACE = 60  # seconds a stage may run past its share (a row under way) before it is stopped
# Those with a timm reference first: a budget that runs out leaves out the others, named.
TRAIN_MODELS = ["lambda_resnet50ts", "keras_resnet50", "resnet_rs50", "lambda_resnet50"]


def policies(device: str) -> list[str]:
    """The training table's precision: mixed bfloat16 on an accelerator (the first GPU run's
    method; the budget holds one precision), float32 on a CPU."""
    return ["float32"] if device == "cpu" else ["bfloat16"]


def plan(args, device: str) -> dict[str, list[str]]:
    """Each stage's command line (``sys.executable`` and the script first)."""
    out = Path(args.output_dir)
    backends = ",".join(args.backends)

    def script(name: str, *arguments: str, output: str) -> list[str]:
        return [sys.executable, str(HERE / f"{name}.py"), *arguments, f"--output={out / output}"]

    if args.tiny:
        return {
            "layers": script(
                "bench_layers", f"--backends={backends}", "--batch=1", "--repeats=1",
                "--no-timm", "--skip-memory", "--max-seconds=5", output="layers.json",
            ),
            "train": script(
                "bench_train", "--size", "64", "--batch", "2", "--steps", "1", "--no-xla",
                "--no-pipeline", "--models", "lambda_resnet50ts", "--policies", "float32",
                "--backends", *args.backends, "timm", output="train.json",
            ),
            "detection": script(
                "bench_detection", f"--backends={backends}", "--tables=training",
                "--sizes=128", "--models=maskrcnn_resnet50_fpn", "--repeats=1",
                output="detection.json",
            ),
        }  # fmt: skip
    return {
        "layers": script(
            "bench_layers", "--quick", f"--backends={backends}", "--no-timm", "--skip-memory",
            output="layers.json",
        ),
        "train": script(
            "bench_train", "--batch", "64", "--size", "256", "--steps", "10", "--no-xla",
            "--no-pipeline", "--models", *TRAIN_MODELS, "--policies", *policies(device),
            "--backends", *args.backends, "timm", output="train.json",
        ),
        "detection": script(
            "bench_detection", f"--backends={backends}", "--sizes=512", "--repeats=3",
            "--models=maskrcnn_resnet50_fpn,lambda_resnet50,resnet_rs50",
            f"--threads={os.cpu_count() or 1}", output="detection.json",
        ),
    }  # fmt: skip


def run_stage(command: list[str], seconds: float) -> dict:
    """Run one stage within ``seconds``: its wall time, and whether it finished. The training
    stage starts no row after its share (``--max-seconds``) and names those it left out; every
    stage is stopped ``GRACE`` seconds after its share."""
    start = time.perf_counter()
    if command[1].endswith("bench_train.py"):
        command = [*command, "--max-seconds", str(max(int(seconds), 1))]
    returncode = run_in_own_group(command, seconds + GRACE)
    if returncode is None:
        status = f"stopped after its share of the budget ({seconds:.0f} s): results left out"
    else:
        status = "finished" if returncode == 0 else f"failed (exit {returncode})"
    return {"command": " ".join(command), "seconds": time.perf_counter() - start, "status": status}


def run_in_own_group(command: list[str], timeout: float) -> int | None:
    """``command``'s exit status, or None when it ran past ``timeout``: then it and every
    process it started (a benchmark's row children, holding the GPU) are killed."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    process = subprocess.Popen(command, env=env, start_new_session=True)
    try:
        return process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        return None


def parse(argv):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_backends_argument(parser, BACKENDS)
    parser.add_argument("--stages", type=names(STAGES), default=list(STAGES))
    parser.add_argument("--budget", type=positive_int, default=480, help="seconds in all")
    parser.add_argument("--tiny", action="store_true", help="tiny sizes on a CPU (the tests)")
    parser.add_argument("--output-dir", required=True)
    return parser.parse_args(argv)


def main(argv=None) -> None:
    args = parse(sys.argv[1:] if argv is None else argv)
    device = device_name()
    if device == "cpu" and not args.tiny:
        print("no GPU or TPU found: the suite's sizes are for one; --tiny runs it on a CPU")
    Path(args.output_dir).mkdir(parents=True, exist_ok=True)
    commands = plan(args, device)
    shares = sum(SHARES[stage] for stage in args.stages)
    summary = {"device": device, "budget_seconds": args.budget, "stages": {}}
    start = time.perf_counter()
    soft_budget = args.budget - GRACE * len(args.stages)  # each stage may overrun by GRACE
    for stage in args.stages:
        left = soft_budget - (time.perf_counter() - start)
        seconds = max(left * SHARES[stage] / shares, 1.0)
        shares -= SHARES[stage]
        print(f"{stage}: {seconds:.0f} s at most", file=sys.stderr, flush=True)
        summary["stages"][stage] = run_stage(commands[stage], seconds)
    summary["seconds"] = time.perf_counter() - start
    path = Path(args.output_dir) / "summary.json"
    path.write_text(json.dumps(summary, indent=1) + "\n")
    for stage, result in summary["stages"].items():
        print(f"{stage}: {result['status']} in {result['seconds']:.0f} s")
    print(f"suite on {device}: {summary['seconds']:.0f} s of a {args.budget} s budget; {path}")


if __name__ == "__main__":
    main()
