"""PyTorch steps side by side: timm's model in eager PyTorch, and the project's model on Keras'
PyTorch backend with Keras' eager steps and with the project's compiled steps.

One table per run, each system in its own process on the same device (the GPU where there is
one), the same batch, size and precision: training (``train_on_batch``; for timm forward, loss,
backward and SGD with momentum) and inference (``predict_on_batch``; timm under
``inference_mode``) images/s as the median of ``--steps`` steps after two warm-ups, each step
time against timm's (``x timm``: 1.00 or less is at most timm's time), the first training and
inference calls alone (the compiled rows trace and compile there, with an empty Inductor cache
of their own: a user's first run), and for the compiled rows the
graphs ``torch.compile`` made and its graph breaks (``torch._dynamo``'s counters over the whole
row: one graph per step, none broken, is the design), and on a CPU the page faults of one more
training step (``timing.page_faults``: memory the step touches after the operating system
mapped it anew). On a CPU the compiled steps keep glibc's large buffers in its heap themselves
([`glibc_heap`][lambda_keras.backend.glibc_heap], a note says so; ``LAMBDA_KERAS_GLIBC_HEAP=0``
in the environment turns it off); ``--glibc-heap`` runs every row, timm's and Keras' eager
steps too, with glibc's own variables for the same (``GLIBC_HEAP``). ``--profile=DIR`` then
writes each row's kernels (``torch_profile.kernel_profile``: per step, the device kernels and
their time, and the costliest operators) to ``DIR/profile_<model>_<system>.txt``, and their
counts and times to the results file's table ``kernels``. ``keras_resnet50`` is
``keras.applications.ResNet50`` as a [`ZooModel`][lambda_keras.zoo.applications.ZooModel] (any
functional model takes the compiled steps that way). The results file is written after every
row.

    python benchmarks/bench_torch_steps.py --batch=2 --size=64 \
        --output=benchmarks/results/torch_steps_64.json
    python benchmarks/bench_torch_steps.py --batch=64 --size=256 --policy=bfloat16  # a GPU
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from arguments import positive_int  # noqa: E402
from results import Table, add_output_argument, device_name, measured_on, write  # noqa: E402
from timing import page_faults  # noqa: E402

SYSTEMS = ("timm", "eager", "compiled")
MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
"""``compiled:<mode>`` among ``--systems``: the compiled steps in one of torch.compile's modes
(``compiled`` alone: the project's choice for the device)."""
MODELS = ("lambda_resnet50ts", "keras_resnet50")
POLICIES = ("float32", "bfloat16", "float16")
PAGE_FAULTS = "page faults / train step"
"""A column on a CPU only: the host memory a step touches anew is what a CPU's step time turns
on; a GPU's steps keep their tensors in the device's memory."""
GLIBC_HEAP = {"MALLOC_MMAP_THRESHOLD_": "33554432", "MALLOC_TRIM_THRESHOLD_": "4294967296"}
"""``--glibc-heap``: glibc's allocator keeps buffers of up to 32 MiB in its heap and the heap's
free memory (4 GiB) instead of mapping each large buffer anew and returning it to the operating
system, whose pages a step then faults in again at every step."""


def keras_row(
    name: str, policy: str, compiled: bool, batch: int, steps: int, size: int,
    profile: str | None = None,
) -> dict:
    """One model on Keras' PyTorch backend, eager or compiled (``jit_compile``); with
    ``profile``, its steps' kernels (``torch_profile``) written there after the timing."""
    import keras
    import numpy as np
    import torch._dynamo.utils
    from bench_train import POLICIES as KERAS_POLICIES
    from bench_train import make_model, timed

    from lambda_keras.zoo import ZooModel

    keras.config.set_dtype_policy(KERAS_POLICIES[policy])
    keras.utils.set_random_seed(0)
    model = make_model(name, size)
    if not isinstance(model, ZooModel):
        model = ZooModel(model.inputs, model.outputs, name=model.name)
    model.compile(
        optimizer=keras.optimizers.SGD(0.1, momentum=0.9),
        loss="sparse_categorical_crossentropy",
        jit_compile=compiled,
    )
    x = np.random.default_rng(0).normal(size=(batch, size, size, 3)).astype("float32")
    x, y = keras.ops.convert_to_tensor(x), keras.ops.zeros((batch,), "int32")
    if compiled:  # a recompile or graph break says why, on stderr
        torch._logging.set_logs(recompiles=True, graph_breaks=True)
    counters = torch._dynamo.utils.counters
    counters.clear()
    first_train, train = timed(lambda: model.train_on_batch(x, y), steps)
    faults = page_faults(lambda: model.train_on_batch(x, y))
    first_infer, infer = timed(lambda: model.predict_on_batch(x), steps)
    row = {"train": batch / train, "infer": batch / infer, "faults": faults}
    if profile:
        row["kernels"] = write_profile(
            profile, lambda: model.train_on_batch(x, y), lambda: model.predict_on_batch(x)
        )
    row.update(first_train=first_train, first_infer=first_infer)
    if compiled:
        row["graphs"] = counters["stats"]["unique_graphs"]
        row["breaks"] = sum(counters["graph_break"].values())
        row["eager"] = [
            f"{step.kind}: {step.eager_reason}"
            for step in (model.train_function, model.predict_function)
            if getattr(step, "eager_reason", None)
        ]
        row["without_cuda_graphs"] = [
            f"{step.kind}: {step.cuda_graphs_reason}"
            for step in (model.train_function, model.predict_function)
            if getattr(step, "cuda_graphs_reason", None)
        ]
        row["cudagraph_skips"] = sum(counters["inductor"].get(k, 0) for k in counters["inductor"]
                                     if "cudagraph_skip" in k)
        row["glibc_heap"] = any(
            getattr(step, "glibc_heap", False)
            for step in (model.train_function, model.predict_function)
        )
    return row


def timm_row(
    name: str, policy: str, batch: int, steps: int, size: int, profile: str | None = None
) -> dict:
    from bench_train import timed, timm_steps

    train_step, inference_step = timm_steps(name, policy, batch, size)
    first, train = timed(train_step, steps)
    faults = page_faults(train_step)
    _, infer = timed(inference_step, steps)
    row = {"train": batch / train, "infer": batch / infer, "first_train": first,
           "first_infer": None, "faults": faults}
    if profile:
        row["kernels"] = write_profile(profile, train_step, inference_step)
    return row


def write_profile(path: str, train_step, inference_step) -> dict[str, list[float]]:
    """The training and the inference step's kernels (``torch_profile``) in the file ``path``;
    returns each step's ``[wall ms under the profiler, kernels, kernel ms, operators ms,
    convolutions ms]``."""
    from torch_profile import kernel_profile

    numbers = {}
    with open(path, "w") as file:
        for kind, step in (("training", train_step), ("inference", inference_step)):
            profile = kernel_profile(step)
            file.write(f"## {kind} step\n{profile.text()}\n")
            numbers[kind] = [
                profile.wall_ms, profile.kernels, profile.kernel_ms, profile.operator_ms,
                profile.convolution_ms,
            ]
    return numbers


def tables(table: Table, kernels: Table) -> list[Table]:
    """The steps' table, and the kernels' where ``--profile`` filled it."""
    return [table, kernels] if kernels.rows else [table]


def kernels_table() -> Table:
    return Table(
        "kernels",
        "PyTorch steps under torch.profiler (--profile): per step, the wall time under the "
        "profiler (which adds its own cost to every operator), the device kernels and their "
        "summed time (memory copies and fills apart; no kernels without a GPU), the operators' "
        "own time summed (on the device with a GPU, on the host without) and the convolutions' "
        "part of it, mean of 3 steps",
        [
            "model", "steps", "step", "wall ms (profiled)", "kernels", "kernel ms",
            "operators ms", "convolutions ms",
        ],
        digits=[0, 0, 0, 1, 0, 1, 1, 1],
        labels=3,
        plot="none",
    )


def child(argument: str) -> None:
    system, name, policy, batch, steps, size, profile = json.loads(argument)
    if system == "timm":
        row = timm_row(name, policy, batch, steps, size, profile)
    else:
        compiled = system.startswith("compiled")
        row = keras_row(name, policy, compiled, batch, steps, size, profile)
    print(json.dumps(row))


def run_child(system: str, name: str, args) -> dict:
    profile = None
    if args.profile:
        profile = os.path.join(args.profile, f"profile_{name}_{system.replace(':', '_')}.txt")
    argument = json.dumps([system, name, args.policy, args.batch, args.steps, args.size, profile])
    env = {**os.environ, "KERAS_BACKEND": "torch", **(GLIBC_HEAP if args.glibc_heap else {})}
    mode = system.partition(":")[2] or "1"
    env["LAMBDA_KERAS_TORCH_COMPILE"] = mode if system.startswith("compiled") else "0"
    with tempfile.TemporaryDirectory() as cache:  # a cold compile, as a user's first run
        env["TORCHINDUCTOR_CACHE_DIR"] = cache
        done = subprocess.run(
            [sys.executable, __file__, "--child", argument], capture_output=True, text=True,
            env=env,
        )
    if done.returncode != 0:
        raise RuntimeError(f"{system} {name} failed:\n{done.stderr[-12000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def make_table(args) -> Table:
    import importlib.metadata

    device = device_name()  # nvidia-smi once
    where = measured_on(device)
    faults = [PAGE_FAULTS] if device == "cpu" else []
    return Table(
        "torch_steps",
        f"PyTorch steps (img/s): timm's model in eager PyTorch, the project's on Keras "
        f"{importlib.metadata.version('keras')}'s PyTorch backend (Keras' eager steps; the "
        f"project's compiled steps), torch {importlib.metadata.version('torch')}, {where}, "
        f"batch {args.batch}, {args.size}x{args.size}, {args.policy}, median of {args.steps} "
        "steps, each row in its own process"
        + (", glibc's large buffers kept in its heap (--glibc-heap)" if args.glibc_heap else ""),
        [
            "model",
            "steps",
            "train img/s",
            "inference img/s",
            "train x timm",
            "inference x timm",
            "first train step (s)",
            "first inference (s)",
            "graphs",
            "graph breaks",
            *faults,
        ],
        digits=[0, 0, 1, 1, 2, 2, 1, 1, 0, 0] + [0] * len(faults),
        labels=2,
    )


def measure(args, table: Table, kernels: Table) -> None:
    start = time.perf_counter()
    for name in args.models:
        reference = None
        for system in args.systems:
            if args.max_seconds and time.perf_counter() - start > args.max_seconds:
                table.note(f"left out after --max-seconds={args.max_seconds}: {system} {name}")
                continue
            try:
                row = run_child(system, name, args)
            except RuntimeError as error:
                table.note(str(error).splitlines()[0] + " (message on stderr)")
                print(error, file=sys.stderr)
                continue
            if system == "timm":
                reference = row
            ratios = [
                reference[k] / row[k] if reference and row[k] else None for k in ("train", "infer")
            ]
            faults = [row.get("faults")] if PAGE_FAULTS in table.columns else []
            table.add(
                name, system, row["train"], row["infer"], *ratios, row["first_train"],
                row["first_infer"], row.get("graphs"), row.get("breaks"), *faults,
            )
            for reason in row.get("eager", []):
                table.note(f"{name} {system}: ran eagerly, {reason}")
            for reason in row.get("without_cuda_graphs", []):
                table.note(f"{name} {system}: compiled again without CUDA graphs, {reason}")
            if row.get("glibc_heap"):
                table.note(
                    f"{name} {system}: glibc's large buffers kept in its heap by the compiled "
                    "steps (lambda_keras.backend.glibc_heap)"
                )
            if row.get("cudagraph_skips"):
                table.note(f"{name} {system}: CUDA graphs skipped {row['cudagraph_skips']} times")
            for kind, numbers in row.get("kernels", {}).items():
                kernels.add(name, system, kind, *numbers)
            write(args.output, "bench_torch_steps", tables(table, kernels), batch=args.batch,
                  size=args.size)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=positive_int, default=2)
    parser.add_argument("--size", type=positive_int, default=64)
    parser.add_argument("--steps", type=positive_int, default=5)
    parser.add_argument("--policy", default="float32", choices=POLICIES)
    parser.add_argument("--models", nargs="+", default=["lambda_resnet50ts"], choices=MODELS)
    parser.add_argument(
        "--systems",
        nargs="+",
        default=list(SYSTEMS),
        choices=[*SYSTEMS, *(f"compiled:{mode}" for mode in MODES)],
    )
    parser.add_argument("--max-seconds", type=positive_int, default=None)
    parser.add_argument(
        "--glibc-heap", action="store_true",
        help="run every row, timm's too, with glibc's large buffers kept in its heap "
        "(MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_), not mapped anew and faulted in at "
        "every step (the compiled steps do so on a CPU by themselves)",
    )
    parser.add_argument(
        "--profile", metavar="DIR", default=None,
        help="after each row's timing, write its steps' kernels (torch.profiler) to "
        "DIR/profile_<model>_<system>.txt and their counts to a table 'kernels'",
    )
    add_output_argument(parser)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child)
        return
    if args.profile:
        os.makedirs(args.profile, exist_ok=True)
    table, kernels = make_table(args), kernels_table()
    table.print_header()
    measure(args, table, kernels)
    write(args.output, "bench_torch_steps", tables(table, kernels), batch=args.batch,
          size=args.size)


if __name__ == "__main__":
    main()
