"""From a builder call to a ready model, on each Keras backend: what a user waits for.

Each cell is a fresh process, as a user's script is (JAX compiles per process; a second build in
one process reuses what the first compiled): it imports Keras and ``lambda_keras``, calls the
builder, and waits until every weight is on the device and loaded (``ready``); for the Mask
R-CNN it then runs ``detect`` on a photo twice (the first call compiles on JAX and TensorFlow).
Each cell is the median of ``--repeats`` processes; the models:

- ``maskrcnn_resnet50_fpn(weights=<file>)`` and ``LambdaResNet50TS(weights=<file>)``: a
  ``.weights.h5`` written before the timing (random values: what loading costs does not depend
  on them);
- ``ResNetRS50()``: random initial values;
- ``keras.applications.ResNet50(weights=None)``: Keras' own builder, for comparison (the
  project initialises none of its values).

    python benchmarks/bench_build.py --output=benchmarks/results/build.json
    python benchmarks/bench_build.py --backends=jax,torch --models=resnet_rs50 --repeats=1
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

from arguments import add_backends_argument, names, positive_int
from children import child_env, run_json_child
from results import Table, add_output_argument, write

BACKENDS = ("tensorflow", "jax", "torch")
MODELS = ("maskrcnn_resnet50_fpn", "lambda_resnet50ts", "resnet_rs50", "keras_resnet50")
FROM_FILE = ("maskrcnn_resnet50_fpn", "lambda_resnet50ts")  # built with weights=<file>
DETECTS = ("maskrcnn_resnet50_fpn",)  # also timed: detect, twice


def builder(name: str):
    """The builder of ``name`` (imports Keras and lambda_keras)."""
    import keras

    from lambda_keras import zoo
    from lambda_keras.detection import maskrcnn_resnet50_fpn

    return {
        "maskrcnn_resnet50_fpn": maskrcnn_resnet50_fpn,
        "lambda_resnet50ts": zoo.LambdaResNet50TS,
        "resnet_rs50": zoo.ResNetRS50,
        "keras_resnet50": keras.applications.ResNet50,
    }[name]


def weights_file(name: str, folder: str) -> str:
    return os.path.join(folder, f"{name}.weights.h5")


def synchronize(model) -> None:
    """Wait until the backend has every weight (JAX and CUDA copy and compute asynchronously)."""
    import keras

    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        jax.block_until_ready([v.value for v in model.weights])
    elif backend == "torch":
        import torch

        if torch.cuda.is_available():
            torch.cuda.synchronize()


def measure(name: str, folder: str) -> dict:
    """In the child: seconds to import, to a ready model, and (a detector) of two detects."""
    start = time.perf_counter()
    build = builder(name)
    cells = {"import": time.perf_counter() - start}
    start = time.perf_counter()
    weights = weights_file(name, folder) if name in FROM_FILE else None
    model = build(weights=weights)
    synchronize(model)
    cells["ready"] = time.perf_counter() - start
    if name in DETECTS:
        from bench_detection import photos

        from lambda_keras.detection import detect

        photo = photos()["china"]
        for call in ("first detect", "second detect"):
            start = time.perf_counter()
            detect(model, photo)  # NumPy out: synchronised
            cells[call] = time.perf_counter() - start
    return cells


def write_weights(names_: list[str], folder: str) -> None:
    """In the child: the weights files the ``weights=<file>`` rows load."""
    for name in names_:
        builder(name)(weights=None).save_weights(weights_file(name, folder))


def run_child(arguments: list[str], backend: str, what: str) -> dict:
    command = [sys.executable, __file__, *arguments]
    return run_json_child(what, command, child_env(backend, os.cpu_count() or 1))


def median_cells(runs: list[dict]) -> dict:
    """Each quantity's median over the runs that finished (empty if none did)."""
    runs = [run for run in runs if run]
    return {key: statistics.median(run[key] for run in runs) for key in (runs[0] if runs else {})}


def parse(argv):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_backends_argument(parser, BACKENDS)
    parser.add_argument("--models", type=names(MODELS), default=list(MODELS))
    parser.add_argument("--repeats", type=positive_int, default=3, help="processes per cell")
    add_output_argument(parser)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    parser.add_argument("--write-weights", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv=None) -> None:
    args = parse(sys.argv[1:] if argv is None else argv)
    if not args.backends:
        sys.exit("bench_build: no Keras backend is installed (tensorflow, jax or torch)")
    if args.child:
        print(json.dumps(measure(args.child, args.folder)))
        return
    if args.write_weights:
        write_weights(args.write_weights.split(","), args.folder)
        print(json.dumps({"written": args.write_weights}))
        return
    table = Table(
        "build",
        f"From the builder call to a ready model, each cell a fresh process (median of "
        f"{args.repeats}), {os.cpu_count()} cores",
        ["model", "backend", "import (s)", "ready (s)", "first detect (s)", "second detect (s)"],
        digits=[0, 0, 2, 2, 2, 2],
        labels=2,
    )
    table.print_header()
    with tempfile.TemporaryDirectory() as folder:
        from_file = [name for name in args.models if name in FROM_FILE]
        if from_file:  # the weights files are backend-neutral: any backend of the run writes them
            written = run_child(
                [f"--write-weights={','.join(from_file)}", f"--folder={folder}"],
                args.backends[0],
                "the weights files",
            )
            if not written:
                table.note("The weights files could not be written: the weights=<file> rows fail.")
        for name in args.models:
            for backend in args.backends:
                runs = [
                    run_child([f"--child={name}", f"--folder={folder}"], backend, name)
                    for _ in range(args.repeats)
                ]
                add_row(table, name, backend, runs)
    write(args.output, "bench_build", [table], repeats=args.repeats)


def add_row(table: Table, name: str, backend: str, runs: list[dict]) -> None:
    cells, finished = median_cells(runs), sum(1 for run in runs if run)
    if not cells:
        table.add(name, backend, "failed", None, None, None)
        return
    table.add(
        name,
        backend,
        cells["import"],
        cells["ready"],
        cells.get("first detect"),
        cells.get("second detect"),
    )
    if finished < len(runs):
        table.note(f"{name} on {backend}: the median of {finished} of {len(runs)} processes.")


if __name__ == "__main__":
    main()
