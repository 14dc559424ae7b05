"""The README's main job, LambdaResNet-50 and its convolutional baseline side by side.

Runs ``scripts/train.py`` (the digits demo: width 0.25, 32x32, 30 epochs of the 90ep recipe)
once per model and Keras backend (``--backend=tensorflow`` and ``--backend=jax``) in a fresh
process, as a user would, and prints a table: parameters, test top-1,
seconds of training (as the script reports them) and wall-clock seconds of the whole run
(imports, data, training, evaluation, export). The target is >= 95% test top-1 in < 5 minutes
on 2 CPU cores.

    python benchmarks/bench_main_job.py
    python benchmarks/bench_main_job.py --models lambda_resnet50 --epochs 2   # a quick look
    python benchmarks/bench_main_job.py --backends jax
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile

from arguments import positive_int
from children import run_script
from results import Table, add_output_argument, write

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRAIN = os.path.join(ROOT, "scripts", "train.py")


BACKENDS = ("tensorflow", "jax")


def run(model: str, model_dir: str, epochs: int | None, backend: str = "tensorflow") -> dict:
    command = [sys.executable, TRAIN, f"--model={model}", f"--model_dir={model_dir}"]
    command.append(f"--backend={backend}")
    if epochs is not None:
        command.append(f"--epochs={epochs}")
    stdout, wall = run_script(command, f"{model} on {backend}")
    params = re.search(r"([\d,]+) parameters", stdout)
    score = re.search(r"top-1 ([\d.]+), top-5 ([\d.]+) \((\d+) s of training", stdout)
    if not (params and score):
        raise RuntimeError(f"unexpected output of {model}:\n{stdout[-3000:]}")
    return {
        "params": int(params[1].replace(",", "")),
        "top1": float(score[1]),
        "train_s": int(score[3]),
        "wall_s": wall,
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["lambda_resnet50", "resnet_rs50"])
    parser.add_argument(
        "--epochs", type=positive_int, default=None, help="Default: the main job's."
    )
    parser.add_argument("--backends", nargs="+", default=list(BACKENDS), choices=BACKENDS)
    add_output_argument(parser)
    args = parser.parse_args(argv)
    table = Table(
        "main_job",
        "scripts/train.py (the main job) and its baseline, each run in a fresh process",
        ["backend", "model", "parameters", "test top-1 (%)", "training s", "whole run s"],
        digits=[0, 0, 0, 2, 0, 0],
        labels=2,
    )
    table.print_header()
    with tempfile.TemporaryDirectory() as tmp:
        for backend in args.backends:
            for model in args.models:
                row = run(model, os.path.join(tmp, backend, model), args.epochs, backend)
                table.add(
                    backend, model, row["params"], 100 * row["top1"], row["train_s"], row["wall_s"]
                )
    write(args.output, "bench_main_job", [table], epochs=args.epochs)


if __name__ == "__main__":
    main()
