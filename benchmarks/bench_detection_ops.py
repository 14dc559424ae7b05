"""NMS and ROIAlign speed on every Keras backend, against TensorFlow's and torchvision's kernels.

Each column runs in its own process: ``lambda_keras.detection.ops`` on each Keras backend in
``--backends`` (compiled as a model step is: ``jax.jit`` on JAX, ``tf.function`` on TensorFlow,
eager on PyTorch), TensorFlow's ``tf.image.non_max_suppression_padded`` (``tf.image``) and
torchvision's ``ops.nms`` / ``batched_nms`` / ``roi_align`` (``torchvision``), each where
installed. ``nms`` and ``batched_nms`` keep up to 1,000 of ``--boxes`` random boxes (sides 16 to
256 pixels in an 800 x 1333 image, 80 classes); ``greedy_nms`` is the ``keras.ops`` loop that
``nms`` runs on JAX (and on PyTorch without torchvision); ``roi_align`` pools 1,000 boxes to
7 x 7 from a 200 x 334 x 256 map (stride 4), ``sampling_ratio=2``, ``aligned=True``;
``mask_head_conv 100`` is one of the mask head's four 3 x 3 convolutions (256 to 256 channels)
over 100 detections' 14 x 14 maps: ``keras.ops.conv`` on each backend (XLA's own convolution on
JAX, oneDNN's on TensorFlow and PyTorch) and PyTorch's ``conv2d`` on ``[N, C, H, W]`` maps in
the ``torchvision`` column (as torchvision's mask head runs it). Medians of ``--repeats`` after
one warm-up, in milliseconds, ``--threads`` threads per process (default 2).

    python benchmarks/bench_detection_ops.py --backends=tensorflow,jax,torch --boxes=1000,5000
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys

import numpy as np
from arguments import names, positive_int, sizes
from children import child_env, run_json_child
from results import Table, add_output_argument, write
from timing import median_seconds

KERAS_BACKENDS = ("tensorflow", "jax", "torch")
REFERENCES = ("tf.image", "torchvision")
KEEP = 1000
MASK_CONV = "mask_head_conv 100"
MASKS = (100, 14, 14, 256)
"""The mask head's input at inference: 100 detections' ``14 x 14 x 256`` maps."""


def inputs(count: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    corner = rng.uniform(0, (800, 1333), (count, 2))
    sides = rng.uniform(16, 256, (count, 2))
    boxes = np.concatenate([corner, corner + sides], 1).astype("float32")
    return {
        "boxes": boxes,
        "scores": rng.permutation(count).astype("float32") / count,
        "classes": rng.integers(0, 80, count).astype("int32"),
        "features": rng.normal(size=(1, 200, 334, 256)).astype("float32"),
        "rois": boxes[:KEEP],
        "masks": rng.normal(size=MASKS).astype("float32"),
        "kernel": rng.normal(0.0, 0.02, (3, 3, MASKS[-1], MASKS[-1])).astype("float32"),
    }


# ---------------------------------------------------------------------------------------------
# In a child process: one column, one JSON line per cell.


def keras_cells(counts: list[int], repeats: int) -> dict[str, float]:
    import keras

    from lambda_keras.detection import ops

    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        compile_ = jax.jit
    elif backend == "tensorflow":
        import tensorflow as tf

        compile_ = tf.function
    else:
        compile_ = lambda fn: fn  # noqa: E731  (PyTorch: eager, as Keras' fit runs it)
    nms = compile_(lambda b, s: ops.nms(b, s, KEEP, 0.5))
    greedy = compile_(lambda b, s: ops.greedy_nms(b, s, KEEP, 0.5))
    batched = compile_(lambda b, s, c: ops.batched_nms(b, s, c, KEEP, 0.5))
    pool = compile_(lambda f, r: ops.roi_align(f, r[None], 7, 0.25, 2, True))
    conv = compile_(lambda x, k: keras.ops.conv(x, k, padding="same"))
    cells = {}
    for count in counts:
        data = {k: keras.ops.convert_to_tensor(v) for k, v in inputs(count).items()}
        b, s, c = data["boxes"], data["scores"], data["classes"]
        cells[f"nms {count}"] = _ms(_synced(nms), repeats, b, s)
        cells[f"greedy_nms {count}"] = _ms(_synced(greedy), repeats, b, s)
        cells[f"batched_nms {count}"] = _ms(_synced(batched), repeats, b, s, c)
    data = {k: keras.ops.convert_to_tensor(v) for k, v in inputs(KEEP).items()}
    cells["roi_align 1000"] = _ms(_synced(pool), repeats, data["features"], data["rois"])
    cells[MASK_CONV] = _ms(_synced(conv), repeats, data["masks"], data["kernel"])
    return cells


def tf_image_cells(counts: list[int], repeats: int) -> dict[str, float]:
    import tensorflow as tf

    @tf.function
    def nms(boxes, scores):
        padded = tf.image.non_max_suppression_padded(
            boxes, scores, KEEP, 0.5, pad_to_max_output_size=True
        )
        return padded[0]  # TensorFlow on the CPU returns once it is computed

    cells = {}
    for count in counts:
        data = inputs(count)
        b, s = tf.constant(data["boxes"]), tf.constant(data["scores"])
        cells[f"nms {count}"] = _ms(nms, repeats, b, s)
    return cells


def torchvision_cells(counts: list[int], repeats: int) -> dict[str, float]:
    import torch
    import torchvision

    cells = {}
    for count in counts:
        data = inputs(count)
        xyxy = torch.from_numpy(np.ascontiguousarray(data["boxes"][:, [1, 0, 3, 2]]))
        s, c = torch.from_numpy(data["scores"]), torch.from_numpy(data["classes"])
        cells[f"nms {count}"] = _ms(torchvision.ops.nms, repeats, xyxy, s, 0.5)
        cells[f"batched_nms {count}"] = _ms(torchvision.ops.batched_nms, repeats, xyxy, s, c, 0.5)
    data = inputs(KEEP)
    features = torch.from_numpy(data["features"]).permute(0, 3, 1, 2).contiguous()
    rois = torch.from_numpy(np.ascontiguousarray(data["rois"][:, [1, 0, 3, 2]]))
    rois = torch.cat([torch.zeros(len(rois), 1), rois], 1)
    cells["roi_align 1000"] = _ms(
        torchvision.ops.roi_align, repeats, features, rois, 7, 0.25, 2, True
    )
    masks = torch.from_numpy(data["masks"]).permute(0, 3, 1, 2).contiguous()  # as torchvision's
    kernel = torch.from_numpy(data["kernel"]).permute(3, 2, 0, 1).contiguous()
    with torch.inference_mode():
        cells[MASK_CONV] = _ms(torch.nn.functional.conv2d, repeats, masks, kernel, None, 1, 1)
    return cells


def _synced(function):
    """``function`` returning only once its first result is computed (JAX runs
    asynchronously)."""
    import keras

    def run(*args):
        result = function(*args)
        keras.ops.convert_to_numpy(result[0] if isinstance(result, tuple) else result)

    return run


def _ms(function, repeats: int, *args) -> float:
    """The median milliseconds of ``function(*args)``."""
    return 1000 * median_seconds(lambda: function(*args), repeats, warmups=1)


def child(column: str, counts: list[int], repeats: int, threads: int) -> None:
    if column == "torchvision" or column == "torch":
        import torch

        torch.set_num_threads(threads)
    if column == "tf.image":
        cells = tf_image_cells(counts, repeats)
    elif column == "torchvision":
        cells = torchvision_cells(counts, repeats)
    else:
        cells = keras_cells(counts, repeats)
    print(json.dumps(cells))


# ---------------------------------------------------------------------------------------------
# In the parent: one child per column, then the table.


def installed(column: str) -> bool:
    module = {"tf.image": "tensorflow", "torchvision": "torchvision"}.get(column, column)
    return importlib.util.find_spec(module) is not None


def run_child(column: str, args) -> dict[str, float]:
    backend = column if column in KERAS_BACKENDS else "tensorflow"
    flags = f"{os.environ.get('XLA_FLAGS', '')} --xla_cpu_multi_thread_eigen=true".strip()
    command = [sys.executable, os.path.abspath(__file__), f"--child={column}"]
    command += [f"--boxes={','.join(map(str, args.boxes))}", f"--repeats={args.repeats}"]
    command += [f"--threads={args.threads}"]
    return run_json_child(column, command, child_env(backend, args.threads, XLA_FLAGS=flags))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", type=names(KERAS_BACKENDS), default=list(KERAS_BACKENDS))
    parser.add_argument("--boxes", type=sizes(1), default=[1000, 5000])
    parser.add_argument("--repeats", type=positive_int, default=5)
    parser.add_argument("--threads", type=positive_int, default=2)
    add_output_argument(parser)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.boxes, args.repeats, args.threads)
        return
    columns = [c for c in [*args.backends, *REFERENCES] if installed(c)]
    missing = [c for c in [*args.backends, *REFERENCES] if not installed(c)]
    results = {column: run_child(column, args) for column in columns}
    cells = [f"{op} {n}" for n in args.boxes for op in ("nms", "greedy_nms", "batched_nms")]
    cells += ["roi_align 1000", MASK_CONV]
    table = Table(
        "ops",
        f"detection ops, {args.threads} threads per process, median ms of {args.repeats}",
        ["op", *columns],
        digits=[0] + [1] * len(columns),
    )
    table.print_header()
    for cell in cells:
        table.add(cell, *[results[c].get(cell) for c in columns])
    if missing:
        table.note(f"not installed, left out: {', '.join(missing)}")
    write(args.output, "bench_detection_ops", [table], threads=args.threads, repeats=args.repeats)


if __name__ == "__main__":
    main()
