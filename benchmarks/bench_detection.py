"""Mask R-CNN speed: inference images/s and training step time, Keras vs torchvision.

For each image size (``--sizes``) and backbone (``--backbones``): a ``MaskRCNN`` with the
standard heads (random weights) — inference images/s (``model.predict_on_batch`` path, a
``tf.function`` without XLA, batch ``--batch``) and the time of one training step
(``train_on_batch`` on synthetic padded ground truth) — and, when torch and torchvision are
installed, torchvision's ``maskrcnn_resnet50_fpn`` (random weights, eval mode for inference,
train mode with synthetic targets for the step) at the same size and the same thread count,
measured in the same run. Medians of ``--repeats`` after one warm-up.

    python benchmarks/bench_detection.py                       # 512 and 1024, both backbones
    python benchmarks/bench_detection.py --sizes=512 --backbones=resnet_rs50 --repeats=2
"""

from __future__ import annotations

import argparse
import importlib.util
import os

import numpy as np
from arguments import names, positive_int, sizes
from timing import median_seconds

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

HAVE_TORCHVISION = importlib.util.find_spec("torchvision") is not None
if HAVE_TORCHVISION:
    import torch  # before TensorFlow: the other order segfaults
    import torchvision

from lambda_keras.detection.image_size import SIZE_MULTIPLE  # noqa: E402  after torch


def synthetic(batch: int, size: int, instances: int = 8, seed: int = 0):
    rng = np.random.default_rng(seed)
    images = rng.uniform(0, 255, (batch, size, size, 3)).astype("float32")
    y1x1 = rng.uniform(0, size * 0.6, (batch, instances, 2))
    hw = rng.uniform(size * 0.05, size * 0.4, (batch, instances, 2))
    boxes = np.concatenate([y1x1, y1x1 + hw], -1).astype("float32")
    classes = rng.integers(0, 80, (batch, instances)).astype("int32")
    masks = np.ones((batch, instances, 28, 28), "float32")
    return images, {"boxes": boxes, "classes": classes, "masks": masks}


def keras_row(backbone_name: str, size: int, batch: int, repeats: int) -> tuple[float, float]:
    import keras
    import tensorflow as tf

    from lambda_keras import zoo
    from lambda_keras.detection import MaskRCNN

    depth = int(backbone_name[-2:])
    if backbone_name.startswith("lambda"):
        backbone = zoo.LambdaResNetBackbone(depth)
    else:
        backbone = zoo.ResNetRSBackbone(depth)
    model = MaskRCNN(backbone, num_classes=80)
    images, targets = synthetic(batch, size)
    detect = tf.function(lambda x: model(x, training=False))
    x = tf.constant(images)
    infer = median_seconds(lambda: detect(x)["boxes"].numpy(), repeats, warmups=1)
    model.compile(optimizer=keras.optimizers.SGD(0.01, momentum=0.9))
    step = median_seconds(lambda: model.train_on_batch(images, targets), repeats, warmups=1)
    return batch / infer, step


def torchvision_row(size: int, batch: int, repeats: int) -> tuple[float, float]:
    model = torchvision.models.detection.maskrcnn_resnet50_fpn(
        weights=None, weights_backbone=None, num_classes=81, min_size=size, max_size=size
    )
    images, targets = synthetic(batch, size)
    tensors = [torch.from_numpy(im).permute(2, 0, 1) / 255.0 for im in images]
    model.eval()

    def infer():
        with torch.inference_mode():
            model(tensors)

    seconds = median_seconds(infer, repeats, warmups=1)
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    torch_targets = []
    for b in range(batch):
        yxyx = targets["boxes"][b]
        masks = torch.zeros((len(yxyx), size, size), dtype=torch.uint8)
        for i, (y1, x1, y2, x2) in enumerate(yxyx.astype(int)):
            masks[i, y1:y2, x1:x2] = 1
        torch_targets.append(
            {
                "boxes": torch.from_numpy(yxyx[:, [1, 0, 3, 2]].copy()),
                "labels": torch.from_numpy(targets["classes"][b].astype("int64") + 1),
                "masks": masks,
            }
        )

    def train_step():
        losses = model(tensors, torch_targets)
        optimizer.zero_grad()
        sum(losses.values()).backward()
        optimizer.step()

    return batch / seconds, median_seconds(train_step, repeats, warmups=1)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=sizes(SIZE_MULTIPLE), default=[512, 1024])
    parser.add_argument(
        "--backbones",
        type=names([f"{f}{d}" for f in ("lambda_resnet", "resnet_rs") for d in (50, 101, 152)]),
        default=["lambda_resnet50", "resnet_rs50"],
    )
    parser.add_argument("--batch", type=positive_int, default=1)
    parser.add_argument("--repeats", type=positive_int, default=3)
    args = parser.parse_args(argv)
    threads = os.cpu_count()
    if HAVE_TORCHVISION:
        torch.set_num_threads(threads)
    print(f"Mask R-CNN, batch {args.batch}, {threads} threads, random weights, 80 classes")
    print("| model | size | inference img/s | train step (s) |")
    print("|---|---|---|---|")
    for size in args.sizes:
        for name in args.backbones:
            images_per_s, step = keras_row(name, size, args.batch, args.repeats)
            print(f"| lambda_keras MaskRCNN, {name} | {size} | {images_per_s:.2f} | {step:.2f} |")
        if HAVE_TORCHVISION:
            images_per_s, step = torchvision_row(size, args.batch, args.repeats)
            print(
                f"| torchvision maskrcnn_resnet50_fpn | {size} | {images_per_s:.2f} | {step:.2f} |"
            )
        else:
            print(f"| torchvision (not installed) | {size} | | |")


if __name__ == "__main__":
    main()
