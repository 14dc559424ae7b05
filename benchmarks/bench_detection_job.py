"""The detection job: ``scripts/train_maskrcnn.py`` with its defaults, run as a user runs it.

The embedded shapes data (300 training and 60 validation images at 128 x 128), a Mask R-CNN on a
LambdaResNet-50 backbone at width 0.25, 1,000 steps at batch 8, then pycocotools' COCOeval.
Each backend runs the script in a fresh process; the table holds the box and mask AP (IoU
.50:.95 and .50) the script prints, the target rows (objects) its steps left out of the loss
(the script's "Left out of the loss" line; 0 where it printed none), its seconds of training and
the whole run's wall clock.

    python benchmarks/bench_detection_job.py --output=benchmarks/results/detection_job.json
    python benchmarks/bench_detection_job.py --steps=20    # a quick look (AP near 0)
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile

from arguments import names, positive_int
from children import run_script
from results import Table, add_output_argument, write

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "train_maskrcnn.py")
BACKENDS = ("tensorflow", "jax", "torch")
FINAL = re.compile(r"box AP ([\d.]+), mask AP ([\d.]+) \(IoU .50:.95\) after (\d+) s of training")
AP50 = re.compile(r"AP50: box ([\d.]+), mask ([\d.]+)\.")
LEFT_OUT = re.compile(r"Left out of the loss: (\d+) target rows")


def run(backend: str, model_dir: str, steps: int | None) -> dict:
    """One run of the script; its printed scores and the wall-clock seconds."""
    command = [sys.executable, SCRIPT, f"--backend={backend}", f"--model_dir={model_dir}"]
    command += [f"--shapes_dir={os.path.join(model_dir, 'shapes')}"]
    if steps is not None:
        command.append(f"--steps={steps}")
    stdout, wall = run_script(command, f"train_maskrcnn.py on {backend}")
    final, ap50, left_out = FINAL.search(stdout), AP50.search(stdout), LEFT_OUT.search(stdout)
    if not (final and ap50):
        raise RuntimeError(f"unexpected output on {backend}:\n{stdout[-3000:]}")
    return {
        "box_ap": float(final[1]),
        "mask_ap": float(final[2]),
        "box_ap50": float(ap50[1]),
        "mask_ap50": float(ap50[2]),
        "left_out": int(left_out[1]) if left_out else 0,
        "train_s": int(final[3]),
        "wall_s": wall,
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", type=names(BACKENDS), default=["tensorflow"])
    parser.add_argument("--steps", type=positive_int, default=None, help="default: the script's")
    add_output_argument(parser)
    args = parser.parse_args(argv)
    table = Table(
        "detection_job",
        "scripts/train_maskrcnn.py with its defaults (the shapes data), a fresh process each",
        ["backend", "box AP", "mask AP", "box AP50", "mask AP50", "targets left out",
         "training s", "whole run s"],
        digits=[0, 3, 3, 3, 3, 0, 0, 0],
        plot="none",
    )
    table.print_header()
    with tempfile.TemporaryDirectory() as tmp:
        for backend in args.backends:
            row = run(backend, os.path.join(tmp, backend), args.steps)
            table.add(
                backend,
                row["box_ap"],
                row["mask_ap"],
                row["box_ap50"],
                row["mask_ap50"],
                row["left_out"],
                row["train_s"],
                row["wall_s"],
            )
    write(args.output, "bench_detection_job", [table], steps=args.steps)


if __name__ == "__main__":
    main()
