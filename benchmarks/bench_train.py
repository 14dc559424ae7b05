"""Training and inference throughput (images/s) of LambdaResNet-50 and its baselines.

Prints one table: LambdaResNet-50, ResNet-RS-50 and ``keras.applications.ResNet50`` at 224px,
float32 vs mixed bfloat16, XLA off vs on; the model step is timed on a batch already in memory
(``train_on_batch`` / ``predict_on_batch``), separately from the input pipeline, whose own
throughput (the ImageNet-style training preprocessing in ``tf.data``) is printed last.

    python benchmarks/bench_train.py                       # batch 32, 3 timed steps
    python benchmarks/bench_train.py --batch 16 --steps 2 --models lambda_resnet50
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras
import numpy as np
import tensorflow as tf
from arguments import positive_int

from lambda_keras import zoo
from lambda_keras.training import data

MODELS = {
    "lambda_resnet50": lambda: zoo.LambdaResNet50(),
    "resnet_rs50": lambda: zoo.ResNetRS50(),
    "keras_resnet50": lambda: keras.applications.ResNet50(weights=None),
}
POLICIES = {"float32": "float32", "bfloat16": "mixed_bfloat16"}


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


def model_throughput(name: str, policy: str, xla: bool, batch: int, steps: int):
    keras.config.set_dtype_policy(POLICIES[policy])
    keras.utils.set_random_seed(0)
    model = MODELS[name]()
    model.compile(
        optimizer=keras.optimizers.SGD(0.1, momentum=0.9),
        loss="sparse_categorical_crossentropy",
        jit_compile=xla,
    )
    x = np.random.default_rng(0).normal(size=(batch, 224, 224, 3)).astype("float32")
    y = np.zeros((batch,), "int32")
    train = batch / timed(lambda: model.train_on_batch(x, y), steps)
    infer = batch / timed(lambda: model.predict_on_batch(x), steps)
    keras.config.set_dtype_policy("float32")
    return train, infer


def pipeline_throughput(batch: int, batches: int) -> float:
    """Images/s of the training preprocessing on 1,000 synthetic 500x375 JPEG-sized images."""
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
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--no-xla", action="store_true", help="skip the XLA rows")
    args = parser.parse_args(argv)
    print(
        f"TensorFlow {tf.__version__}, Keras {keras.__version__}, {os.cpu_count()} CPUs, "
        f"batch {args.batch}, 224x224, median of {args.steps} steps"
    )
    print("| model | precision | XLA | train img/s | inference img/s |")
    print("|---|---|---|---|---|")
    for name in args.models:
        for policy in POLICIES:
            for xla in (False,) if args.no_xla else (False, True):
                train, infer = model_throughput(name, policy, xla, args.batch, args.steps)
                print(
                    f"| {name} | {policy} | {'on' if xla else 'off'} | {train:.1f} | {infer:.1f} |",
                    flush=True,
                )
    rate = pipeline_throughput(args.batch, batches=5)
    print(f"\ninput pipeline (random-resized crop, flip, RandAugment, 224px): {rate:.0f} img/s")


if __name__ == "__main__":
    main()
