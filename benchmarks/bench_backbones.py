"""Peak memory and time of a pyramid backbone's forward+backward pass at detection resolution.

For each backbone: one training step's worth of work at ``--size`` x ``--size``, batch
``--batch`` (the gradient of the sum of every pyramid level's mean with respect to all trainable
weights, a ``tf.function`` without XLA): the median time of ``--repeats`` runs after one warm-up
run, and the process's peak resident memory. Each backbone runs in its own child process, so
the peak is its own (``ru_maxrss`` of the child).

    python benchmarks/bench_backbones.py                       # LambdaResNet-101, ResNet-RS-101
    python benchmarks/bench_backbones.py --size=512 --models=lambda_resnet50,resnet_rs50

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
from timing import median_seconds

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

DEFAULT_MODELS = ("lambda_resnet101", "resnet_rs101")
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

    seconds = median_seconds(lambda: step().numpy(), repeats, warmups=1)
    return {
        "model": name,
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
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.size % 32 or args.size < 32:
        parser.error(f"--size must be a multiple of 32; received {args.size}.")
    if args.child:
        print(json.dumps(measure(args.child, args.size, args.batch, args.repeats)))
        return
    print(
        f"forward+backward, {args.size}x{args.size}, batch {args.batch}, "
        f"{os.cpu_count()} cores, lambda layers implementation='conv'"
    )
    print("| backbone | params (M) | step (s) | peak memory (GB) |")
    print("|---|---|---|---|")
    for name in args.models:
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
        )
        if result.returncode != 0:
            print(f"| {name} | failed: {result.stderr.strip().splitlines()[-1:]} | | |")
            continue
        row = json.loads(result.stdout.strip().splitlines()[-1])
        print(f"| {name} | {row['params_m']:.1f} | {row['seconds']:.2f} | {row['peak_gb']:.2f} |")


if __name__ == "__main__":
    main()
