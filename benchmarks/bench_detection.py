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

``--converted`` instead times torchvision's ``maskrcnn_resnet50_fpn`` against the same model
converted (``lambda_keras.detection.maskrcnn_resnet50_fpn``, random weights copied from
torchvision's through the converter) on scikit-learn's two sample photos at torchvision's own
preprocessing (shorter side 800, longer at most 1333): torchvision's ``model([image])``, the
exported SavedModel's ``serving_default`` (resizing and mask pasting included) and the Keras
model on its batch alone (``tf.function``), with ``--threads`` threads each (default 2).

    python benchmarks/bench_detection.py --converted --repeats=3
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


def _set_threads(threads: int) -> None:
    import tensorflow as tf

    if HAVE_TORCHVISION:
        torch.set_num_threads(threads)
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)


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


def converted_rows(repeats: int) -> None:
    """The converted-model table (module docstring)."""
    import tempfile

    from sklearn.datasets import load_sample_images

    photos = dict(zip(("china", "flower"), load_sample_images().images, strict=True))
    with tempfile.TemporaryDirectory() as workdir:
        model = torchvision.models.detection.maskrcnn_resnet50_fpn(
            weights=None, weights_backbone=None, num_classes=91
        ).eval()
        checkpoint = os.path.join(workdir, "maskrcnn.pth")
        torch.save(model.state_dict(), checkpoint)
        import tensorflow as tf

        from lambda_keras.detection import maskrcnn_resnet50_fpn
        from lambda_keras.detection.convert_torchvision import convert
        from lambda_keras.detection.serving import export_detector

        weights = convert("maskrcnn_resnet50_fpn", checkpoint, f"{workdir}/m.weights.h5")
        keras_model = maskrcnn_resnet50_fpn(weights=weights)
        served = tf.saved_model.load(export_detector(keras_model, f"{workdir}/sm"))
        serve = served.signatures["serving_default"]
        detect = tf.function(keras_model)
        print("| photo | resized | torchvision (s) | SavedModel (s) | Keras model (s) | ratio |")
        print("|---|---|---|---|---|---|")
        for name, photo in photos.items():
            print(_photo_row(name, photo, model, serve, detect, repeats))


def _photo_row(name, photo, model, serve, detect, repeats: int) -> str:
    import tensorflow as tf

    from lambda_keras.detection.image_size import round_up
    from lambda_keras.detection.transform_graph import torchvision_resize

    tensor = torch.from_numpy(photo.copy()).permute(2, 0, 1) / 255.0

    def run_torchvision():
        with torch.inference_mode():
            model([tensor])

    reference = median_seconds(run_torchvision, repeats, warmups=1)
    image = tf.constant(photo)
    saved = median_seconds(lambda: serve(image=image), repeats, warmups=1)
    resized, size = torchvision_resize(image)
    h, w = (int(s) for s in size)
    batch = tf.image.pad_to_bounding_box(resized, 0, 0, round_up(h), round_up(w))
    inputs = {"images": batch[None], "image_sizes": tf.constant([[h, w]])}
    alone = median_seconds(lambda: detect(inputs)["boxes"].numpy(), repeats, warmups=1)
    return (
        f"| {name} {photo.shape[0]}x{photo.shape[1]} | {h}x{w} | {reference:.2f} | "
        f"{saved:.2f} | {alone:.2f} | {saved / reference:.2f}x |"
    )


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
    parser.add_argument("--converted", action="store_true", help="the converted-model table")
    parser.add_argument("--threads", type=positive_int, default=None)
    args = parser.parse_args(argv)
    if args.converted and not HAVE_TORCHVISION:
        parser.error("--converted compares against torchvision: pip install torchvision")
    threads = args.threads or (2 if args.converted else os.cpu_count())
    _set_threads(threads)
    if args.converted:
        print(f"maskrcnn_resnet50_fpn at torchvision's preprocessing, {threads} threads each")
        converted_rows(args.repeats)
        return
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
