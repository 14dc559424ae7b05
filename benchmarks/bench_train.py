"""Training and inference throughput (images/s) of LambdaResNet-50 and its baselines.

Prints one table: LambdaResNet-50, the port of timm's ``lambda_resnet50ts``
(``zoo.LambdaResNet50TS``), ResNet-RS-50, ``keras.applications.ResNet50`` and (with
``--models``) ``keras.applications.EfficientNetB0``-``B3`` at ``--size`` pixels (224), in each
precision of ``--policies`` (float32 and mixed bfloat16; mixed float16 where the device has it),
on each Keras backend asked for (TensorFlow with XLA off and on, JAX, which always compiles with
XLA, PyTorch eagerly), and with ``timm`` among the backends timm's own models as the reference:
its ``lambda_resnet50ts`` in the ``lambda_resnet50ts`` rows and its ``resnet50`` in the
``keras_resnet50`` rows, in eager PyTorch with every convolution in ``channels_last``,
``torch.autocast`` for the mixed precisions and ``cudnn.benchmark`` (the method of the
project's first GPU run, one H100, 2026-11-26). Every row runs in its own process on the device its
framework computes on (the GPU where there is one), on a batch already there
(``train_on_batch`` / ``predict_on_batch`` on backend tensors): each throughput is the median of
``--steps`` steps after two warm-ups; ``first step (s)`` is the first training step alone, its
compiles included (XLA on JAX, TensorFlow's XLA rows). The input pipeline's own throughput (the
ImageNet-style training preprocessing in ``tf.data``) is printed last. The results file is
written after every row: a run stopped midway keeps what it measured.

    python benchmarks/bench_train.py                       # batch 32, 3 timed steps, TF + JAX
    python benchmarks/bench_train.py --batch 16 --steps 2 --models lambda_resnet50
    python benchmarks/bench_train.py --backends jax torch timm --models lambda_resnet50ts
"""

from __future__ import annotations

import argparse
import importlib.metadata
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

BACKENDS = ("tensorflow", "jax", "torch", "timm")  # timm: its own models, eager PyTorch
DEFAULT_MODELS = ("lambda_resnet50", "resnet_rs50", "keras_resnet50")
EFFICIENTNETS = tuple(f"efficientnet_b{k}" for k in range(4))
MODEL_NAMES = (*DEFAULT_MODELS, "lambda_resnet50ts", *EFFICIENTNETS)
POLICIES = {"float32": "float32", "bfloat16": "mixed_bfloat16", "float16": "mixed_float16"}
TIMM_MODELS = {"lambda_resnet50ts": "lambda_resnet50ts", "keras_resnet50": "resnet50"}
"""The rows where timm has the same architecture: the model timm builds for them."""
REQUIRES = {"timm": ("torch", "timm")}  # a backend -> the packages its rows import


def make_model(name: str, size: int = 224):
    import keras

    from lambda_keras import zoo

    shape = (size, size, 3)
    if name in EFFICIENTNETS:
        build = getattr(keras.applications, f"EfficientNetB{name[-1]}")
        return build(weights=None, input_shape=shape)
    return {
        "lambda_resnet50": zoo.LambdaResNet50,
        "lambda_resnet50ts": zoo.LambdaResNet50TS,
        "resnet_rs50": zoo.ResNetRS50,
        "keras_resnet50": keras.applications.ResNet50,
    }[name](weights=None, input_shape=shape)


def timed(fn, steps: int) -> tuple[float, float]:
    """``(seconds of the first call, median seconds of the next ``steps`` calls)``: one more
    warm-up call between them."""
    start = time.perf_counter()
    fn()
    first = time.perf_counter() - start
    fn()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return first, statistics.median(times)


def model_throughput(name: str, policy: str, xla: bool, batch: int, steps: int, size: int = 224):
    """Train and inference images/s, and the first training step's seconds, of one model on
    this process' Keras backend (the batch a backend tensor, on its device)."""
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
    x, y = keras.ops.convert_to_tensor(x), keras.ops.zeros((batch,), "int32")
    first, train = timed(lambda: model.train_on_batch(x, y), steps)  # returns host numbers
    _, infer = timed(lambda: model.predict_on_batch(x), steps)  # returns NumPy
    return batch / train, batch / infer, first


def timm_throughput(name: str, policy: str, xla: bool, batch: int, steps: int, size: int = 224):
    """The same for timm's model in the ``name`` rows, in eager PyTorch on the GPU where there
    is one (``timm_steps``)."""
    del xla  # eager
    train_step, inference_step = timm_steps(name, policy, batch, size)
    first, train = timed(train_step, steps)
    _, infer = timed(inference_step, steps)
    return batch / train, batch / infer, first


def timm_steps(name: str, policy: str, batch: int, size: int = 224):
    """timm's model of the ``name`` rows: its training and inference steps on one batch, each
    returning when the device has finished it. Convolutions channels_last, ``torch.autocast``
    for mixed precision (a gradient scaler for float16), ``cudnn.benchmark``, SGD with
    momentum."""
    import timm
    import torch
    from timing import synchronized, torch_device

    device = torch_device()
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(0)
    model = timm.create_model(TIMM_MODELS[name], num_classes=1000).to(device)
    for module in model.modules():  # the lambda layer's 5-D weights refuse it model-wide
        if isinstance(module, torch.nn.Conv2d):
            module.to(memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    mixed = {"bfloat16": torch.bfloat16, "float16": torch.float16}.get(policy)
    scaler = torch.amp.GradScaler(device, enabled=policy == "float16")
    x = torch.randn(batch, 3, size, size, device=device).to(memory_format=torch.channels_last)
    y = torch.zeros(batch, dtype=torch.long, device=device)

    def train_step():
        if not model.training:  # a flag; the timed steps of one kind find it set
            model.train()
        with torch.autocast(device, dtype=mixed, enabled=mixed is not None):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()

    def inference_step():
        if model.training:
            model.eval()
        with torch.inference_mode(), torch.autocast(device, mixed, enabled=mixed is not None):
            model(x)

    return synchronized(train_step), synchronized(inference_step)


def row_in_child(backend: str, row: list):
    """One row's ``(train, inference, first step)`` in a fresh process: Keras on ``backend``,
    or timm's model (``backend="timm"``)."""
    command = [sys.executable, __file__, "--child", json.dumps([backend, *row])]
    env = {**os.environ, "KERAS_BACKEND": "torch" if backend == "timm" else backend}
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"{backend} {row[0]} {row[1]} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def child(argument: str) -> None:
    """One row, printed as JSON: Keras on the backend ``KERAS_BACKEND`` names, or timm."""
    backend, *row = json.loads(argument)
    if backend == "timm":
        print(json.dumps(timm_throughput(*row)))
        return
    print(json.dumps(model_throughput(*row)))


def measure_rows(rows: list[tuple], args, table: Table) -> None:
    """Each ``(backend, model, policy, xla)`` row in its own process, into ``table`` (written
    after each row); a row that fails keeps empty cells and a note, and once ``--max-seconds``
    have passed the rows not started are left out and named in a note."""
    start, skipped = time.perf_counter(), []
    for backend, name, policy, xla in rows:
        if args.max_seconds and time.perf_counter() - start > args.max_seconds:
            skipped.append(f"{backend} {name} {policy}")
            continue
        try:
            row = [name, policy, xla, args.batch, args.steps, args.size]
            train, infer, first = row_in_child(backend, row)
        except RuntimeError as error:
            train = infer = first = None
            table.note(str(error).splitlines()[0] + " (message on stderr)")
            print(error, file=sys.stderr)
        table.add(backend, name, policy, "on" if xla else "off", train, infer, first)
        write_results(args, table)
    if skipped:
        table.note(f"left out after --max-seconds={args.max_seconds}: {', '.join(skipped)}")


def write_results(args, table: Table) -> None:
    write(args.output, "bench_train", [table], batch=args.batch, steps=args.steps)


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
        help="Keras backends to compare, and timm (its own models, the reference); those not "
        "installed are left out with a note",
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
    if args.child:
        child(args.child)
        return
    backends = [b for b in args.backends if installed(b)]
    for backend in sorted(set(args.backends) - set(backends)):
        print(
            f"{backend} is not installed ({', '.join(REQUIRES.get(backend, (backend,)))}): "
            "its rows are left out"
        )
    table = make_table(args)
    table.print_header()
    measure_rows(planned_rows(args, backends), args, table)
    if args.pipeline and installed("tensorflow"):
        rate = pipeline_throughput(args.batch, batches=5)
        table.note(
            f"input pipeline (random-resized crop, flip, RandAugment, 224px): {rate:.0f} img/s"
        )
    elif args.pipeline:
        table.note("input pipeline not timed: it is tf.data, and TensorFlow is not installed")
    write_results(args, table)


def installed(backend: str) -> bool:
    return all(importlib.util.find_spec(p) is not None for p in REQUIRES.get(backend, (backend,)))


def planned_rows(args, backends: list[str]) -> list[tuple]:
    """``(backend, model, precision, XLA)`` rows, model by model and precision by precision
    (every backend measured on a model before the next, so a budget that runs out leaves out
    whole models); timm's rows only for the models it has."""
    xla_settings = {"tensorflow": (False,) if args.no_xla else (False, True), "jax": (True,)}
    return [
        (backend, name, policy, xla)
        for name in args.models
        for policy in args.policies
        for backend in backends
        if backend != "timm" or name in TIMM_MODELS
        for xla in xla_settings.get(backend, (False,))
    ]


def make_table(args) -> Table:
    from results import measured_on

    where = measured_on()
    return Table(
        "train",
        f"Training and inference throughput (img/s), each backend as its rows say (timm: "
        f"timm's own model, eager PyTorch), Keras {importlib.metadata.version('keras')}, "
        f"{where}, batch {args.batch}, {args.size}x{args.size}, median of {args.steps} steps, "
        "each row in its own process",
        [
            "backend",
            "model",
            "precision",
            "XLA",
            "train img/s",
            "inference img/s",
            "first step (s)",
        ],
        digits=[0, 0, 0, 0, 1, 1, 2],
        labels=4,
    )


if __name__ == "__main__":
    main()
