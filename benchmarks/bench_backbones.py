"""Peak memory and time of a pyramid backbone's forward+backward pass at detection resolution.

For each backbone: one training step's worth of work at ``--size`` x ``--size``, batch
``--batch`` (the gradient of the sum of every pyramid level's mean with respect to all trainable
weights, a ``tf.function`` without XLA): the median time of ``--repeats`` runs after one warm-up
run, and the process's peak resident memory. Each backbone runs in its own child process, so
the peak is its own (``ru_maxrss`` of the child).

    python benchmarks/bench_backbones.py                       # LambdaResNet-101, ResNet-RS-101
    python benchmarks/bench_backbones.py --size=512 --models=lambda_resnet50,resnet_rs50
    python benchmarks/bench_backbones.py --models=lambda_resnet50 --onednn=on,off

``--onednn=on,off`` runs each backbone twice, with TensorFlow's oneDNN CPU kernels on and off
(``TF_ENABLE_ONEDNN_OPTS``; TensorFlow's default turns them on only on CPUs with AVX-512):
the lambda convolution in the LambdaResNets' lambda layers depends on them. The table's oneDNN
column is what TensorFlow reports in the child.

Weights are random: neither time nor memory depends on their values.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys

from arguments import names, positive_int
from results import Table, add_output_argument, write
from timing import median_seconds

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

DEFAULT_MODELS = ("lambda_resnet101", "resnet_rs101")
ONEDNN = {"on": "1", "off": "0"}  # --onednn -> TF_ENABLE_ONEDNN_OPTS
DEPTHS = (50, 101, 152, 200, 270, 350, 420)  # lambda_keras.zoo.resnet_rs.DEPTHS
BACKBONES = tuple(f"{family}{d}" for family in ("lambda_resnet", "resnet_rs") for d in DEPTHS)


def build(name: str):
    from lambda_keras import zoo

    family, depth = name.rstrip("0123456789"), int(name[len(name.rstrip("0123456789")) :])
    if family == "lambda_resnet":
        return zoo.LambdaResNetBackbone(depth)
    if family == "resnet_rs":
        return zoo.ResNetRSBackbone(depth)
    raise ValueError(
        f"--models: unknown backbone {name!r} (lambda_resnet<depth>, resnet_rs<depth>)."
    )


def measure(name: str, size: int, batch: int, repeats: int) -> dict:
    """Run in the child: time and peak memory of forward+backward."""
    import numpy as np
    import tensorflow as tf

    model = build(name)
    images = tf.constant(np.random.default_rng(0).normal(size=(batch, size, size, 3)), tf.float32)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            outputs = model(images, training=True)
            loss = tf.add_n([tf.reduce_mean(level) for level in outputs.values()])
        grads = tape.gradient(loss, model.trainable_weights)
        return tf.add_n([tf.reduce_sum(g) for g in grads])

    from tensorflow.python.util import _pywrap_util_port

    seconds = median_seconds(lambda: step().numpy(), repeats, warmups=1)
    return {
        "model": name,
        "onednn": "on" if _pywrap_util_port.IsMklEnabled() else "off",
        "params_m": model.count_params() / 1e6,
        "seconds": seconds,
        "peak_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--models",
        type=names(
            BACKBONES,
            "lambda_resnet<depth>, resnet_rs<depth> with depth in " + ", ".join(map(str, DEPTHS)),
        ),
        default=list(DEFAULT_MODELS),
    )
    parser.add_argument("--size", type=positive_int, default=1024)
    parser.add_argument("--batch", type=positive_int, default=1)
    parser.add_argument("--repeats", type=positive_int, default=2)
    parser.add_argument(
        "--onednn",
        type=names(ONEDNN),
        default=[],
        help="comma-separated: on, off (default: as the environment and TensorFlow decide)",
    )
    add_output_argument(parser)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.size % 32 or args.size < 32:
        parser.error(f"--size must be a multiple of 32; received {args.size}.")
    if args.child:
        print(json.dumps(measure(args.child, args.size, args.batch, args.repeats)))
        return
    table = Table(
        "backbones",
        f"forward+backward, {args.size}x{args.size}, batch {args.batch}, "
        f"{os.cpu_count()} cores, lambda layers implementation='conv'",
        ["backbone", "oneDNN", "params (M)", "step (s)", "peak memory (GB)"],
        digits=[0, 0, 1, 2, 2],
        labels=2,
    )
    table.print_header()
    for name in args.models:
        for onednn in args.onednn or [None]:
            env = dict(os.environ)
            if onednn is not None:
                env["TF_ENABLE_ONEDNN_OPTS"] = ONEDNN[onednn]
            add_row(table, name, run_child(name, args, env))
    write(args.output, "bench_backbones", [table], size=args.size, batch=args.batch)


def run_child(name: str, args, env: dict) -> dict | str:
    """The child's measurement, or the last line of its error."""
    result = subprocess.run(
        [
            sys.executable,
            __file__,
            f"--child={name}",
            f"--size={args.size}",
            f"--batch={args.batch}",
            f"--repeats={args.repeats}",
        ],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    if result.returncode != 0:
        return f"failed: {result.stderr.strip().splitlines()[-1:]}"
    return json.loads(result.stdout.strip().splitlines()[-1])


def add_row(table: Table, name: str, row: dict | str) -> None:
    if isinstance(row, str):
        table.add(name, row, None, None, None)
        return
    table.add(name, row["onednn"], row["params_m"], row["seconds"], row["peak_gb"])


if __name__ == "__main__":
    main()
