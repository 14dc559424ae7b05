"""JAX on CPUs: whether XLA's CPU convolution options take effect, and what they do.

XLA's CPU runtime has options for how it compiles convolutions: YNNPACK fusions of single
convolutions (``--xla_cpu_experimental_ynn_fusion_type=+individual_convolution``) and oneDNN
custom calls (``--xla_cpu_experimental_onednn_custom_call=true``; ``--xla_cpu_use_onednn=true
--xla_cpu_experimental_onednn_fusion_type=dot,eltwise``); ``xla_emitter`` turns the YNNPACK
fusions that XLA's defaults make off (``--xla_cpu_experimental_ynn_fusion_type=``: every
convolution, dot and reduction with XLA's own code), ``ynn_no_convolution`` and
``ynn_no_reduce`` only the single convolutions' or the reductions'. Each ``--flags`` entry runs
in its own JAX process with that ``XLA_FLAGS`` (``none``: XLA's defaults), plus a TensorFlow
process (oneDNN, no XLA) as the reference, ``--threads`` threads each. Each process times, at
``--size`` pixels and batch ``--batch``, a training step (``train_on_batch``, SGD with momentum)
and a prediction (``predict_on_batch``) of each model of ``--models``, and one training step of
the converted ``maskrcnn_resnet50_fpn`` (random weights, batch 1, at each of
``--detection-sizes`` pixels, eight synthetic boxes); medians of ``--repeats`` after compiling.

Whether an option took effect is read from what XLA compiled (``--xla_dump_to``, the optimised
HLO of every program): the table counts the YNNPACK fusions (``__ynn_fusion``), the oneDNN
custom calls (``__onednn$``) and the convolution instructions (inside those fusions or not). A
process whose XLA rejects a flag leaves its column empty with the error in a note.

    python benchmarks/bench_xla_flags.py --output=benchmarks/results/xla_flags.json
    python benchmarks/bench_xla_flags.py --flags=none,ynn --models=resnet_rs50 --no-detection
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from arguments import names, positive_int, sizes
from children import child_env
from results import Table, add_output_argument, write
from timing import median_seconds

FLAG_SETS = {
    "none": "",
    "ynn": "--xla_cpu_experimental_ynn_fusion_type=+individual_convolution",
    "xla_emitter": "--xla_cpu_experimental_ynn_fusion_type=",  # no YNNPACK fusion at all
    # XLA's defaults less one kind of YNNPACK fusion (jaxlib 0.10.2's defaults: single dots,
    # single convolutions, reductions)
    "ynn_no_convolution": "--xla_cpu_experimental_ynn_fusion_type=-individual_convolution",
    "ynn_no_reduce": "--xla_cpu_experimental_ynn_fusion_type=-reduce",
    "onednn_custom_call": "--xla_cpu_experimental_onednn_custom_call=true",
    "use_onednn": "--xla_cpu_use_onednn=true --xla_cpu_experimental_onednn_fusion_type=dot,eltwise",
}
COLUMNS = {"none": "jax", **{name: f"jax {name}" for name in FLAG_SETS if name != "none"}}
MODELS = {"lambda_resnet50": "LambdaResNet50", "resnet_rs50": "ResNetRS50"}  # zoo constructors
MARKERS = {  # column -> what the optimised HLO text holds for each
    "YNNPACK fusions": re.compile(r"__ynn_fusion"),
    "oneDNN calls": re.compile(r"__onednn\$"),
    "convolutions": re.compile(r"=\s*\S+\s+convolution\("),
}


def count_markers(dump_dir: str | Path) -> dict[str, int]:
    """Occurrences of each of ``MARKERS`` in the optimised HLO files XLA dumped."""
    counts = dict.fromkeys(MARKERS, 0)
    for path in Path(dump_dir).glob("*after_optimizations.txt"):
        text = path.read_text()
        for name, pattern in MARKERS.items():
            counts[name] += len(pattern.findall(text))
    return counts


# ---------------------------------------------------------------------------------------------
# In a child process: one column, a JSON object of cells on its last line.


def _synthetic_classification(batch: int, size: int):
    import numpy as np

    rng = np.random.default_rng(0)
    images = rng.uniform(0, 255, (batch, size, size, 3)).astype("float32")
    return images, rng.integers(0, 1000, (batch,)).astype("int32")


def _classifier_cells(name: str, args) -> dict[str, float]:
    import keras

    from lambda_keras import zoo

    model = getattr(zoo, MODELS[name])(input_shape=(args.size, args.size, 3))
    model.compile(
        optimizer=keras.optimizers.SGD(0.01, momentum=0.9),
        loss=keras.losses.SparseCategoricalCrossentropy(),
    )
    images, labels = _synthetic_classification(args.batch, args.size)
    return {
        f"{name} train": median_seconds(
            lambda: model.train_on_batch(images, labels), args.repeats, warmups=1
        ),
        f"{name} predict": median_seconds(
            lambda: model.predict_on_batch(images), args.repeats, warmups=1
        ),
    }


def _detection_cells(args) -> dict[str, float]:
    import keras
    from bench_detection import synthetic

    from lambda_keras.detection import maskrcnn_resnet50_fpn

    model = maskrcnn_resnet50_fpn(num_classes=80)
    model.compile(optimizer=keras.optimizers.SGD(0.01, momentum=0.9))
    cells = {}
    for size in args.detection_sizes:
        images, targets = synthetic(1, size)
        cells[f"maskrcnn_resnet50_fpn train {size}"] = median_seconds(
            lambda i=images, t=targets: model.train_on_batch(i, t), args.repeats, warmups=1
        )
    return cells


def child(args) -> None:
    cells = {}
    for name in args.models:
        cells.update(_classifier_cells(name, args))
    if args.detection:
        cells.update(_detection_cells(args))
    print(json.dumps(cells))


# ---------------------------------------------------------------------------------------------
# In the parent: one child per column.


def run_column(column: str, args, argv: list[str]) -> tuple[dict, dict, str]:
    """``(cells, HLO counts, error)`` of one column's child process."""
    print(f"timing {column} ...", file=sys.stderr, flush=True)
    command = [sys.executable, os.path.abspath(__file__), *argv, f"--child={column}"]
    with tempfile.TemporaryDirectory() as dump:
        if column == "tensorflow":
            env = child_env("tensorflow", args.threads)
        else:
            flags = f"{FLAG_SETS[column]} --xla_dump_to={dump} --xla_dump_hlo_as_text".strip()
            env = child_env("jax", args.threads, XLA_FLAGS=flags)
        done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
        counts = count_markers(dump) if column != "tensorflow" else {}
    if done.returncode != 0:
        error = (done.stderr.strip().splitlines() or ["no message"])[-1][:300]
        print(f"{column} failed: {error}", file=sys.stderr, flush=True)
        return {}, {}, error
    return json.loads(done.stdout.strip().splitlines()[-1]), counts, ""


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flags", type=names(FLAG_SETS), default=list(FLAG_SETS))
    parser.add_argument("--models", type=names(MODELS), default=list(MODELS))
    parser.add_argument("--size", type=positive_int, default=160)
    parser.add_argument("--batch", type=positive_int, default=8)
    parser.add_argument("--detection-sizes", type=sizes(64), default=[256])
    parser.add_argument("--detection", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--tensorflow", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--repeats", type=positive_int, default=3)
    parser.add_argument("--threads", type=positive_int, default=2)
    add_output_argument(parser)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def tables(results: dict, counts: dict, errors: dict, columns: list[str], args) -> list[Table]:
    rows = [f"{m} {mode}" for m in args.models for mode in ("train", "predict")]
    if args.detection:
        rows += [f"maskrcnn_resnet50_fpn train {size}" for size in args.detection_sizes]
    timing = Table(
        "steps",
        f"one step, seconds (classifiers {args.size} px batch {args.batch}, Mask R-CNN batch 1; "
        f"{args.threads} threads)",
        ["step", *[COLUMNS.get(c, c) for c in columns]],
    )
    timing.print_header()
    for row in rows:
        timing.add(row, *[results[c].get(row) for c in columns])
    compiled = Table(
        "compiled",
        "what XLA compiled under each XLA_FLAGS (the optimised HLO of every program)",
        ["XLA_FLAGS", *MARKERS],
        digits=[0] * (len(MARKERS) + 1),
        plot="none",
    )
    compiled.print_header()
    for column in [c for c in columns if c != "tensorflow"]:
        label = f"{COLUMNS[column]}: {FLAG_SETS[column] or '(none)'}"
        compiled.add(label, *[counts[column].get(m) for m in MARKERS])
    for column, error in errors.items():
        compiled.note(f"{column} failed: {error}")
    return [timing, compiled]


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse(argv)
    if args.child:
        child(args)
        return
    columns = (["tensorflow"] if args.tensorflow else []) + args.flags
    passed = [a for a in argv if not a.startswith("--output")]
    results, counts, errors = {}, {}, {}
    for column in columns:
        results[column], counts[column], error = run_column(column, args, passed)
        if error:
            errors[column] = error
    made = tables(results, counts, errors, columns, args)
    write(args.output, "bench_xla_flags", made, threads=args.threads, repeats=args.repeats)


if __name__ == "__main__":
    main()
