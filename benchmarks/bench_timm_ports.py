"""Inference speed of the Keras ports of timm's LambdaResNets next to timm itself.

For each model: images/s of a forward pass in inference mode at 256x256 (batch ``--batch``,
median of ``--repeats`` timed runs after two warm-up runs) for the Keras port (a
``tf.function`` without XLA, ``implementation="auto"`` and each explicit implementation with
``--implementations``) and for timm's PyTorch model (``torch.inference_mode``), in the same
process with the same number of threads (``--threads``, default: all cores). The weights are
random: speed does not depend on their values.

    python benchmarks/bench_timm_ports.py                  # the three models
    python benchmarks/bench_timm_ports.py --models=lambda_resnet26t --batch=4 --repeats=3

Needs PyTorch and timm (``pip install torch==2.14.1 torchvision==0.29.1 timm``).
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import timm
import torch  # before TensorFlow (imported by lambda_keras): the other order segfaults
from arguments import names, positive_int
from results import Table, add_output_argument, write
from timing import median_seconds

from lambda_keras.layers.implementation_choice import IMPLEMENTATIONS
from lambda_keras.zoo import get_model, timm_lambda_resnet

MODELS = tuple(timm_lambda_resnet.SPECS)


def images_per_second(fn, batch: int, repeats: int) -> float:
    return batch / median_seconds(fn, repeats)


def keras_speed(name: str, x: np.ndarray, implementation: str, repeats: int) -> float:
    import tensorflow as tf

    model = get_model(name, implementation=implementation, classifier_activation=None)
    forward = tf.function(lambda images: model(images, training=False))
    images = tf.constant(x)
    return images_per_second(lambda: forward(images).numpy(), len(x), repeats)


def timm_speed(name: str, x: np.ndarray, repeats: int) -> float:
    model = timm.create_model(name, pretrained=False).eval()
    images = torch.from_numpy(x).permute(0, 3, 1, 2).contiguous()

    def forward():
        with torch.inference_mode():
            return model(images).numpy()

    return images_per_second(forward, len(x), repeats)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", type=names(MODELS), default=list(MODELS))
    parser.add_argument("--batch", type=positive_int, default=8)
    parser.add_argument("--repeats", type=positive_int, default=5)
    parser.add_argument("--threads", type=positive_int, default=os.cpu_count())
    parser.add_argument("--implementations", type=names(IMPLEMENTATIONS), default=["auto"])
    add_output_argument(parser)
    args = parser.parse_args(argv)
    import tensorflow as tf

    torch.set_num_threads(args.threads)
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)

    x = np.random.default_rng(0).normal(size=(args.batch, 256, 256, 3)).astype("float32")
    implementations = args.implementations
    table = Table(
        "timm_ports",
        f"Inference at 256x256, batch {args.batch}, {args.threads} threads, "
        f"median of {args.repeats} (images/s)",
        ["model", "timm (PyTorch)", *(f"Keras `{i}`" for i in implementations)],
        digits=[0, 1, *(1 for _ in implementations)],
    )
    table.print_header()
    for name in args.models:
        reference = timm_speed(name, x, args.repeats)
        ours = [keras_speed(name, x, impl, args.repeats) for impl in implementations]
        table.add(name, reference, *ours)
    write(args.output, "bench_timm_ports", [table], batch=args.batch, threads=args.threads)


if __name__ == "__main__":
    main()
