"""Training and inference throughput (images/s) of LambdaResNet-50 and its baselines.

Prints one table: LambdaResNet-50, ResNet-RS-50, ``keras.applications.ResNet50`` and (with
``--models``) ``keras.applications.EfficientNetB0``-``B3`` at ``--size`` pixels (224), in each
precision of ``--policies`` (float32 and mixed bfloat16; mixed float16 where the device has it),
on each Keras backend asked for (TensorFlow with XLA off and on, JAX,
which always compiles with XLA, and PyTorch when it is installed), every row in its own process;
the model step is timed on a batch already in memory (``train_on_batch`` /
``predict_on_batch``), separately from the input pipeline, whose own throughput (the
ImageNet-style training preprocessing in ``tf.data``) is printed last.

    python benchmarks/bench_train.py                       # batch 32, 3 timed steps, TF + JAX
    python benchmarks/bench_train.py --batch 16 --steps 2 --models lambda_resnet50
    python benchmarks/bench_train.py --backends tensorflow jax torch
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from arguments import positive_int  # noqa: E402
from results import Table, add_output_argument, write

BACKENDS = ("tensorflow", "jax", "torch")
DEFAULT_MODELS = ("lambda_resnet50", "resnet_rs50", "keras_resnet50")
EFFICIENTNETS = tuple(f"efficientnet_b{k}" for k in range(4))
MODEL_NAMES = (*DEFAULT_MODELS, *EFFICIENTNETS)
POLICIES = {"float32": "float32", "bfloat16": "mixed_bfloat16", "float16": "mixed_float16"}


def make_model(name: str, size: int = 224):
    import keras

    from lambda_keras import zoo

    shape = (size, size, 3)
    if name in EFFICIENTNETS:
        build = getattr(keras.applications, f"EfficientNetB{name[-1]}")
        return build(weights=None, input_shape=shape)
    return {
        "lambda_resnet50": zoo.LambdaResNet50,
        "resnet_rs50": zoo.ResNetRS50,
        "keras_resnet50": keras.applications.ResNet50,
    }[name](weights=None, input_shape=shape)


def timed(fn, steps: int) -> float:
    """Median seconds of ``fn()`` over ``steps`` runs, after two warm-up runs."""
    fn()
    fn()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def model_throughput(name: str, policy: str, xla: bool, batch: int, steps: int, size: int = 224):
    """Train and inference images/s of one model on this process' Keras backend."""
    import keras
    import numpy as np

    keras.config.set_dtype_policy(POLICIES[policy])
    keras.utils.set_random_seed(0)
    model = make_model(name, size)
    model.compile(
        optimizer=keras.optimizers.SGD(0.1, momentum=0.9),
        loss="sparse_categorical_crossentropy",
        jit_compile=xla,
    )
    x = np.random.default_rng(0).normal(size=(batch, size, size, 3)).astype("float32")
    y = np.zeros((batch,), "int32")
    train = batch / timed(lambda: model.train_on_batch(x, y), steps)
    infer = batch / timed(lambda: model.predict_on_batch(x), steps)
    return train, infer


def row_in_child(
    backend: str, name: str, policy: str, xla: bool, batch: int, steps: int, size: int
):
    """:func:`model_throughput` in a fresh process running Keras on ``backend``."""
    row = [name, policy, xla, batch, steps, size]
    command = [sys.executable, __file__, "--child", json.dumps(row)]
    env = {**os.environ, "KERAS_BACKEND": backend}
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"{backend} {name} {policy} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure_rows(rows: list[tuple], args, table: Table) -> None:
    """Each ``(backend, model, policy, xla)`` row in its own process, into ``table``; a row that
    fails keeps empty cells and a note, and once ``--max-seconds`` have passed the rows not
    started are left out and named in a note."""
    start, skipped = time.perf_counter(), []
    for backend, name, policy, xla in rows:
        if args.max_seconds and time.perf_counter() - start > args.max_seconds:
            skipped.append(f"{backend} {name} {policy}")
            continue
        try:
            train, infer = row_in_child(
                backend, name, policy, xla, args.batch, args.steps, args.size
            )
        except RuntimeError as error:
            train = infer = None
            table.note(str(error).splitlines()[0] + " (message on stderr)")
            print(error, file=sys.stderr)
        table.add(backend, name, policy, "on" if xla else "off", train, infer)
    if skipped:
        table.note(f"left out after --max-seconds={args.max_seconds}: {', '.join(skipped)}")


def pipeline_throughput(batch: int, batches: int) -> float:
    """Images/s of the training preprocessing on 1,000 synthetic 500x375 JPEG-sized images."""
    import numpy as np
    import tensorflow as tf

    from lambda_keras.training.classification import data

    images = np.random.default_rng(0).integers(0, 255, (1000, 375, 500, 3), dtype=np.uint8)
    source = data.Source(
        tf.data.Dataset.from_tensor_slices((images, np.zeros(1000, "int32"))), 1000, ["x"]
    )
    dataset = data.make_dataset(
        source,
        training=True,
        image_size=224,
        global_batch_size=batch,
        repeat=True,
        randaugment_magnitude=15,
    )
    iterator = iter(dataset)
    next(iterator)
    start = time.perf_counter()
    for _ in range(batches):
        next(iterator)
    return batch * batches / (time.perf_counter() - start)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=positive_int, default=32)
    parser.add_argument("--steps", type=positive_int, default=3)
    parser.add_argument("--size", type=positive_int, default=224)
    parser.add_argument("--models", nargs="+", default=list(DEFAULT_MODELS), choices=MODEL_NAMES)
    parser.add_argument(
        "--policies", nargs="+", default=["float32", "bfloat16"], choices=list(POLICIES)
    )
    parser.add_argument(
        "--backends",
        nargs="+",
        default=["tensorflow", "jax"],
        choices=BACKENDS,
        help="Keras backends to compare (torch: skipped with a note when not installed)",
    )
    parser.add_argument("--no-xla", action="store_true", help="skip TensorFlow's XLA rows")
    parser.add_argument(
        "--max-seconds",
        type=positive_int,
        default=None,
        help="start no row after this many seconds (the rows left out are named in a note)",
    )
    parser.add_argument(
        "--pipeline",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="time the tf.data training preprocessing too (a note under the table)",
    )
    add_output_argument(parser)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:  # one row, on the backend KERAS_BACKEND names
        print(json.dumps(model_throughput(*json.loads(args.child))))
        return
    backends = [b for b in args.backends if b != "torch" or importlib.util.find_spec("torch")]
    if len(backends) < len(args.backends):
        print("PyTorch is not installed: its rows are skipped (pip install torch)")
    import keras

    table = Table(
        "train",
        f"Training and inference throughput (img/s), each backend as its rows say, Keras "
        f"{keras.__version__}, {os.cpu_count()} CPUs, batch {args.batch}, "
        f"{args.size}x{args.size}, median of {args.steps} steps, each row in its own process",
        ["backend", "model", "precision", "XLA", "train img/s", "inference img/s"],
        digits=[0, 0, 0, 0, 1, 1],
        labels=4,
    )
    table.print_header()
    xla_settings = {"tensorflow": (False,) if args.no_xla else (False, True), "jax": (True,)}
    rows = [
        (backend, name, policy, xla)
        for backend in backends
        for name in args.models
        for policy in args.policies
        for xla in xla_settings.get(backend, (False,))
    ]
    measure_rows(rows, args, table)
    if args.pipeline:
        rate = pipeline_throughput(args.batch, batches=5)
        table.note(
            f"input pipeline (random-resized crop, flip, RandAugment, 224px): {rate:.0f} img/s"
        )
    write(args.output, "bench_train", [table], batch=args.batch, steps=args.steps)


if __name__ == "__main__":
    main()
