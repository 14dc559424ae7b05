"""Mask R-CNN speed on every Keras backend against torchvision: inference per photo, training step.

Each column runs in its own process (``--threads`` threads, default 2): the Keras backends in
``--backends`` and, where installed, torchvision, on the device its framework computes on (the
GPU where there is one: torchvision's model and tensors go there as Keras' do; its process
converts the weights with Keras on PyTorch, so no column but TensorFlow's imports TensorFlow).
Medians of ``--repeats`` after one warm-up. The results file is written after every column: a
run stopped midway keeps the columns it measured.

**Inference** (``--tables=inference``): torchvision's ``maskrcnn_resnet50_fpn`` (random weights,
``torch.manual_seed(0)``) and the same model converted
(``lambda_keras.detection.maskrcnn_resnet50_fpn`` with those weights through the converter, so
both keep the same detections: the cap of 100 per photo with these weights) on scikit-learn's two
sample photos in three shapes (landscape, upright, square) at torchvision's preprocessing
(shorter side 800, longer at most 1333): torchvision's ``model([image])``,
``lambda_keras.detection.detect(model, photo)`` on each backend (resize, the model and the
pasting of the masks into the photo) and, on TensorFlow, the exported SavedModel's
``serving_default``. Seconds per photo, a second table of how many detections each column
kept on each photo, and a third of the minor page faults of one more call per photo (memory the
call touched for the first time since the allocator mapped it: glibc's allocator maps large
buffers anew and returns them when freed, unless told otherwise; TensorFlow's keeps its own).
``--glibc-heap`` starts every column's process, torchvision's too, with glibc's allocator
keeping the memory it frees (``GLIBC_KEPT``). Without torchvision the Keras models keep their
own random weights (a note says so): their detections, and so their mask pasting, differ.
Where each photo's time goes, stage by stage: ``bench_detection_stages.py``.

**Training** (``--tables=training``): one step (``train_on_batch``, SGD with momentum and a zero
learning rate, so that every timed step starts from the same weights) of each
model of ``--models`` at each of ``--sizes`` (batch ``--batch``, synthetic images and eight boxes
per image, 80 classes) on each backend. ``maskrcnn_resnet50_fpn`` is the fair comparison: the
converted model (torchvision's architecture, torchvision's random weights of
``torch.manual_seed(0)`` through the converter) on each backend and, in the torchvision column,
torchvision's own in train mode on the same batch, both set up as for fine-tuning from
pretrained weights (frozen batch norm, stem and first stage frozen: ``trainable_backbone_layers``
3, the converter's default and what torchvision builds when given weights); the other models are
``MaskRCNN`` on the project's backbones (``lambda_resnet50``, ``resnet_rs50``, ...). Seconds per
step.

    python benchmarks/bench_detection.py --backends=tensorflow,jax,torch \\
        --output=benchmarks/results/detection.json
    python benchmarks/bench_detection.py --tables=training --sizes=512 --models=resnet_rs50
    python benchmarks/bench_detection.py --backends=tensorflow,jax,torch --tables=inference \\
        --glibc-heap --output=benchmarks/results/detection_glibc_heap.json
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import sys

import numpy as np
from arguments import names, positive_int, sizes
from children import run_columns
from results import Table, add_output_argument, write
from timing import median_seconds, page_faults, synchronized, torch_device

KERAS_BACKENDS = ("tensorflow", "jax", "torch")
SIZE_MULTIPLE = 64  # lambda_keras.detection.image_size.SIZE_MULTIPLE (not imported: no Keras)
BACKBONES = [f"{f}{d}" for f in ("lambda_resnet", "resnet_rs") for d in (50, 101, 152)]
CONVERTED = "maskrcnn_resnet50_fpn"  # torchvision's architecture: a row with a torchvision cell
MODELS = [CONVERTED, *BACKBONES]
PHOTOS = ("china", "flower, upright", "china, square")
GLIBC_KEPT = {
    "MALLOC_ARENA_MAX": "1",
    "MALLOC_MMAP_MAX_": "0",
    "MALLOC_TRIM_THRESHOLD_": "4294967296",
}
"""``--glibc-heap``: every column's process starts with glibc's allocator keeping the memory it
frees for the next call. One arena for all threads (a thread's own arena maps each buffer above
its 64 MiB heap anew and unmaps it when freed, and drops a heap when it empties: XLA's CPU threads
allocate the compiled program's scratch memory and YNNPACK's buffers there); no buffer mapped
apart from the heap; 4 GiB of free memory at the heap's top kept. Without them each call touches
most of its memory for the first time again (the page faults table)."""
# Every timed step starts from the same weights: a step that learned would move random weights
# far in a few steps, and how many proposals NMS keeps (so how many RoIs the heads of
# torchvision and of the eager backends take) would drift apart from step to step and backend
# to backend. The update still runs, with a zero learning rate.
LEARNING_RATE = 0.0


def synthetic(batch: int, size: int, instances: int = 8, seed: int = 0):
    rng = np.random.default_rng(seed)
    images = rng.uniform(0, 255, (batch, size, size, 3)).astype("float32")
    y1x1 = rng.uniform(0, size * 0.6, (batch, instances, 2))
    hw = rng.uniform(size * 0.05, size * 0.4, (batch, instances, 2))
    boxes = np.concatenate([y1x1, y1x1 + hw], -1).astype("float32")
    classes = rng.integers(0, 80, (batch, instances)).astype("int32")
    masks = np.ones((batch, instances, 28, 28), "float32")
    return images, {"boxes": boxes, "classes": classes, "masks": masks}


def photos() -> dict[str, np.ndarray]:
    """scikit-learn's two sample photos (427 x 640) in three shapes: ``PHOTOS``' landscape,
    upright (turned a quarter) and square (the centre crop)."""
    from sklearn.datasets import load_sample_images

    china, flower = load_sample_images().images
    side = min(china.shape[:2])
    left = (china.shape[1] - side) // 2
    shapes = (china, np.ascontiguousarray(np.rot90(flower)), china[:, left : left + side])
    return dict(zip(PHOTOS, shapes, strict=True))


# ---------------------------------------------------------------------------------------------
# In a child process: one column, a JSON object of cells on its last line.


def keras_cells(args) -> dict[str, float]:
    import keras

    cells = {}
    if "inference" in args.tables:
        from lambda_keras.detection import detect, maskrcnn_resnet50_fpn

        weights = os.path.join(args.workdir, "converted.weights.h5")
        model = maskrcnn_resnet50_fpn(weights=weights if os.path.exists(weights) else None)
        for name, photo in photos().items():
            last = {}  # the timed calls' detections: counted without another call
            cells[f"infer {name}"] = median_seconds(
                lambda p=photo, last=last: last.update(detect(model, p)), args.repeats, warmups=1
            )
            cells[f"found {name}"] = int(last["num_detections"])
            cells[f"faults {name}"] = page_faults(lambda p=photo: detect(model, p))
        if keras.backend.backend() == "tensorflow":
            cells.update(_saved_model_cells(model, args))
    if "training" in args.tables:
        for size in args.sizes:
            for name in args.models:
                cells[f"step {name} {size}"] = _keras_step(name, size, args)
    return cells


def _saved_model_cells(model, args) -> dict[str, float]:
    import tensorflow as tf

    from lambda_keras.detection.serving import export_detector

    serve = tf.saved_model.load(export_detector(model, os.path.join(args.workdir, "sm")))
    serve = serve.signatures["serving_default"]
    cells = {}
    for name, photo in photos().items():
        tensor = tf.constant(photo)
        last = {}
        cells[f"serve {name}"] = median_seconds(
            lambda p=tensor, last=last: last.update(serve(image=p)), args.repeats, warmups=1
        )
        cells[f"served {name}"] = int(last["num_detections"])
    return cells


def _keras_step(name: str, size: int, args) -> float:
    import keras

    model = _keras_model(name, size, args.workdir)
    images, targets = synthetic(args.batch, size)
    model.compile(optimizer=keras.optimizers.SGD(LEARNING_RATE, momentum=0.9))
    return median_seconds(lambda: model.train_on_batch(images, targets), args.repeats, warmups=1)


def _keras_model(name: str, size: int, workdir: str):
    """The converted ``maskrcnn_resnet50_fpn`` with torchvision's weights (its own without
    torchvision), or a ``MaskRCNN`` on the backbone ``name``."""
    from lambda_keras import zoo
    from lambda_keras.detection import MaskRCNN, maskrcnn_resnet50_fpn

    if name == CONVERTED:
        weights = os.path.join(workdir, f"train_{size}.weights.h5")
        return maskrcnn_resnet50_fpn(weights if os.path.exists(weights) else None, num_classes=80)
    depth = int(re.search(r"\d+$", name).group())
    family = zoo.LambdaResNetBackbone if name.startswith("lambda") else zoo.ResNetRSBackbone
    return MaskRCNN(family(depth), num_classes=80)


def torchvision_cells(args) -> dict[str, float]:
    import torch

    cells = {}
    if "inference" in args.tables:
        model = torchvision_model()
        convert_weights(model, args.workdir)
        model.to(torch_device())
        for name, photo in photos().items():
            tensor, last = torchvision_input(photo), {}

            def infer(tensor=tensor, last=last):
                with torch.inference_mode():
                    last.update(model([tensor])[0])

            cells[f"infer {name}"] = median_seconds(synchronized(infer), args.repeats, warmups=1)
            cells[f"found {name}"] = len(last["boxes"])
            cells[f"faults {name}"] = page_faults(synchronized(infer))
    if "training" in args.tables and CONVERTED in args.models:
        for size in args.sizes:
            cells[f"step {CONVERTED} {size}"] = _torchvision_step(size, args)
    return cells


def torchvision_model():
    """torchvision's ``maskrcnn_resnet50_fpn`` with ``torch.manual_seed(0)``'s random weights,
    in eval mode."""
    import torch
    import torchvision

    torch.manual_seed(0)
    return torchvision.models.detection.maskrcnn_resnet50_fpn(
        weights=None, weights_backbone=None, num_classes=91
    ).eval()


def torchvision_input(photo: np.ndarray):
    """A photo as torchvision's detectors take it: ``float [3, height, width]`` in [0, 1], on the
    device PyTorch computes on."""
    import torch

    return torch.from_numpy(photo.copy()).permute(2, 0, 1).to(torch_device()) / 255.0


def convert_weights(model, workdir: str, name: str = "converted") -> None:
    """torchvision's weights -> ``{name}.weights.h5`` for the Keras columns."""
    import torch

    from lambda_keras.detection.convert_torchvision import convert

    checkpoint = os.path.join(workdir, f"{name}.pth")
    torch.save({key: value.cpu() for key, value in model.state_dict().items()}, checkpoint)
    convert(CONVERTED, checkpoint, os.path.join(workdir, f"{name}.weights.h5"))


def _torchvision_step(size: int, args) -> float:
    import torch

    model = _torchvision_fine_tuning_model(size)
    convert_weights(model, args.workdir, f"train_{size}")  # the same weights for the Keras columns
    device = torch_device()
    model.to(device).train()
    images, targets = synthetic(args.batch, size)
    tensors = [torch.from_numpy(im).permute(2, 0, 1).to(device) / 255.0 for im in images]
    optimizer = torch.optim.SGD(model.parameters(), lr=LEARNING_RATE, momentum=0.9)
    torch_targets = []
    for b in range(args.batch):
        yxyx = targets["boxes"][b]
        masks = torch.zeros((len(yxyx), size, size), dtype=torch.uint8)
        for i, (y1, x1, y2, x2) in enumerate(yxyx.astype(int)):
            masks[i, y1:y2, x1:x2] = 1
        torch_targets.append(
            {
                "boxes": torch.from_numpy(yxyx[:, [1, 0, 3, 2]].copy()).to(device),
                "labels": torch.from_numpy(targets["classes"][b].astype("int64") + 1).to(device),
                "masks": masks.to(device),
            }
        )

    def train_step():
        losses = model(tensors, torch_targets)
        optimizer.zero_grad()
        sum(losses.values()).backward()
        optimizer.step()

    return median_seconds(synchronized(train_step), args.repeats, warmups=1)


def _torchvision_fine_tuning_model(size: int):
    """torchvision's ``maskrcnn_resnet50_fpn`` as it trains from pretrained weights, with
    ``torch.manual_seed(0)``'s random ones: frozen batch norm and the stem and first stage
    frozen (``trainable_backbone_layers=3``), what ``maskrcnn_resnet50_fpn(weights=...)`` builds
    and what the converted model does. (Without weights torchvision trains every stage and
    batch norm's statistics: another, costlier step.)"""
    import torch
    import torchvision
    from torchvision.models.detection.backbone_utils import _resnet_fpn_extractor
    from torchvision.ops.misc import FrozenBatchNorm2d

    torch.manual_seed(0)
    resnet = torchvision.models.resnet50(weights=None, norm_layer=FrozenBatchNorm2d)
    return torchvision.models.detection.MaskRCNN(
        _resnet_fpn_extractor(resnet, 3), num_classes=81, min_size=size, max_size=size
    )


def child(args) -> None:
    if args.child in ("torch", "torchvision"):
        import torch  # before TensorFlow: the other order segfaults

        torch.set_num_threads(args.threads)
    cells = torchvision_cells(args) if args.child == "torchvision" else keras_cells(args)
    print(json.dumps(cells))


# ---------------------------------------------------------------------------------------------
# In the parent: one child per column (torchvision first: it writes the converted weights).


def column_backend(column: str) -> str:
    """The Keras backend a column's process runs: its own, or PyTorch for torchvision's (it
    converts its weights with Keras, on PyTorch, which it has anyway)."""
    return column if column in KERAS_BACKENDS else "torch"


def inference_tables(results: dict, columns: list[str]) -> list[Table]:
    """Seconds per photo; how many detections each column kept on each photo (the mask head's
    and the pasting's work grow with them); and the minor page faults of one call per photo
    after the timed ones (the memory a call touches for the first time, which the allocator
    mapped anew)."""
    keras_columns = [c for c in columns if c in KERAS_BACKENDS]
    reference = [c for c in columns if c == "torchvision"]
    serving = ["tensorflow SavedModel"] if "tensorflow" in columns else []
    title = "maskrcnn_resnet50_fpn at torchvision's preprocessing"
    header = ["photo", *reference, *keras_columns]
    counts = {"digits": [0] * (len(header) + len(serving)), "plot": "none"}
    tables = [
        Table(
            "inference",
            f"{title}, seconds per photo (lambda_keras: detect(model, photo))",
            header + serving,
        ),
        Table("detections", f"{title}, detections per photo", header + serving, **counts),
        Table(
            "page_faults",
            f"{title}, minor page faults of one call per photo",
            header,
            digits=[0] * len(header),
            plot="none",
        ),
    ]
    cells = (("infer", "serve"), ("found", "served"), ("faults", None))
    for table, (cell, served) in zip(tables, cells, strict=True):
        table.print_header()
        for name in PHOTOS:
            row = [name, *[results[c].get(f"{cell} {name}") for c in reference + keras_columns]]
            row += [results["tensorflow"].get(f"{served} {name}") for _ in serving if served]
            table.add(*row)
        if not reference:
            table.note("torchvision not installed: the Keras models keep their own random weights.")
    return tables


def training_table(results: dict, columns: list[str], args) -> Table:
    table = Table(
        "training",
        f"Mask R-CNN, one training step (batch {args.batch}, 80 classes), seconds",
        ["model", "size", *columns],
        labels=2,
    )
    table.print_header()
    for size in args.sizes:
        for name in args.models:
            cells = [results[c].get(f"step {name} {size}") for c in columns]
            label = f"{name}, converted" if name == CONVERTED else f"MaskRCNN, {name}"
            table.add(label, size, *cells)
    if CONVERTED in args.models and "torchvision" not in columns:
        table.note(f"torchvision not installed: {CONVERTED} keeps its own random weights.")
    return table


def installed(column: str) -> bool:
    return importlib.util.find_spec(column) is not None


def add_column_arguments(parser: argparse.ArgumentParser) -> None:
    """What every column of the detection benchmarks takes: ``--repeats``, ``--threads``,
    ``--output`` and the children's own two."""
    parser.add_argument("--repeats", type=positive_int, default=3)
    parser.add_argument("--threads", type=positive_int, default=2)
    parser.add_argument(
        "--glibc-heap", action="store_true",
        help="start every column's process, torchvision's too, with glibc's allocator keeping "
        "the memory it frees (GLIBC_KEPT)",
    )
    add_output_argument(parser)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--workdir", default=None, help=argparse.SUPPRESS)


def glibc_heap_note() -> str:
    """What ``--glibc-heap`` set, for the tables' notes."""
    settings = " ".join(f"{name}={value}" for name, value in GLIBC_KEPT.items())
    return f"every column's process started with glibc's allocator keeping its memory: {settings}"


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", type=names(KERAS_BACKENDS), default=["tensorflow"])
    parser.add_argument(
        "--tables", type=names(("inference", "training")), default=["inference", "training"]
    )
    parser.add_argument("--sizes", type=sizes(SIZE_MULTIPLE), default=[512])
    parser.add_argument(
        "--models", type=names(MODELS), default=[CONVERTED, "lambda_resnet50", "resnet_rs50"]
    )
    parser.add_argument("--batch", type=positive_int, default=1)
    add_column_arguments(parser)
    return parser.parse_args(argv)


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse(argv)
    if args.child:
        child(args)
        return
    # torchvision's column: its inference, and its training step of the converted model only.
    reference = ["torchvision"] if "inference" in args.tables or CONVERTED in args.models else []
    measure_columns(__file__, [*reference, *args.backends], args, argv, write_tables)


def measure_columns(script: str, wanted: list[str], args, argv: list[str], write) -> None:
    """Each installed column of ``wanted`` in its own child of ``script``, then ``write(results,
    columns, missing, args)``: after every column (a stopped run keeps what it measured) and,
    printed, at the end."""
    columns = [c for c in wanted if installed(c)]
    missing = [c for c in wanted if not installed(c)]
    results = run_columns(
        script,
        columns,
        argv,
        args.threads,
        column_backend,
        lambda so_far: write(so_far, [c for c in columns if c in so_far], missing, args),
        GLIBC_KEPT if args.glibc_heap else None,
    )
    write(results, columns, missing, args)


def write_tables(results: dict, columns: list[str], missing: list[str], args) -> None:
    """The tables of the columns measured, printed and written to ``--output``."""
    tables = []
    if "inference" in args.tables:
        tables += inference_tables(results, columns)
    if "training" in args.tables:
        tables.append(training_table(results, columns, args))
    if args.glibc_heap:
        for table in tables:
            table.note(glibc_heap_note())
    if missing:
        tables[-1].note(f"not installed, left out: {', '.join(missing)}")
    failed = [c for c in columns if not results[c]]
    if failed:
        tables[-1].note(f"failed (empty cells, message above): {', '.join(failed)}")
    write(
        args.output, "bench_detection", tables,
        threads=args.threads, repeats=args.repeats, glibc_heap=args.glibc_heap,
    )


if __name__ == "__main__":
    main()
