"""Where a Mask R-CNN photo's time goes, stage by stage, on every Keras backend and in torchvision.

The model and photos of ``bench_detection.py``: torchvision's ``maskrcnn_resnet50_fpn`` with
``torch.manual_seed(0)``'s random weights and the same weights converted, scikit-learn's
sample photos in three shapes at torchvision's preprocessing. Each column runs in its own
process (``--threads`` threads, default 2). The stages:

- **preprocess**: the photo resized to torchvision's size and padded (torchvision's
  ``model.transform``, which also normalizes it; the eager first part of ``detect``: the Keras
  models normalize in the backbone stage);
- **backbone**, **FPN**;
- **RPN and proposals**: the RPN head, the boxes decoded, NMS;
- **box head and selection**: ROIAlign, the box head and the detections' selection (per-class
  NMS);
- **mask head**: ROIAlign at 14, the mask head, each detection's class;
- **mask pasting**: boxes and masks back into the photo's pixels (torchvision's
  ``transform.postprocess``; the eager last part of ``detect``, NumPy arrays out).

torchvision's stages are timed inside one ``model([image])`` call (hooks on its modules). A Keras
column runs the model's stages one after another, each compiled as ``detect`` compiles the
whole model on that backend (``tf.function`` on TensorFlow, ``jax.jit`` on JAX, eager on
PyTorch on a CPU); **whole call** is ``detect(model, photo)`` itself, so the gap between it and
the stages' sum is what compiling the stages apart changes (fusion across stages, dispatch).
Medians of ``--repeats`` runs after one warm-up, in seconds, per stage. Where there is a GPU,
torchvision computes on it as the Keras columns do, and each stage's time ends when the device
has finished it; there PyTorch's Keras stages run eagerly, while ``detect`` (the whole call)
compiles by default.

    python benchmarks/bench_detection_stages.py --backends=tensorflow,jax,torch \\
        --output=benchmarks/results/detection_stages.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable

from arguments import names
from bench_detection import (
    KERAS_BACKENDS,
    PHOTOS,
    add_column_arguments,
    convert_weights,
    glibc_heap_note,
    measure_columns,
    photos,
    torchvision_input,
    torchvision_model,
)
from results import Table, write
from timing import median_seconds, torch_device, wait_for_device

STAGES = (
    "preprocess",
    "backbone",
    "FPN",
    "RPN and proposals",
    "box head and selection",
    "mask head",
    "mask pasting",
)
SUM, WHOLE = "sum of stages", "whole call"


def medians(runs: list[dict[str, float]]) -> dict[str, float]:
    """Each stage's median over ``runs`` (one dict of stage seconds per run)."""
    return {stage: statistics.median(run[stage] for run in runs) for stage in runs[0]}


# ---------------------------------------------------------------------------------------------
# torchvision: its stages timed inside one call, by hooks on its modules.


class TorchvisionClock:
    """Seconds per stage of the last ``model([image])`` of a torchvision ``MaskRCNN``."""

    def __init__(self, model):
        self.seconds: dict[str, float] = {}
        self._started: dict[str, float] = {}
        heads = model.roi_heads
        for stage, module in (
            ("preprocess", model.transform),
            ("backbone", model.backbone.body),
            ("FPN", model.backbone.fpn),
            ("RPN and proposals", model.rpn),
            ("roi heads", heads),
        ):
            module.register_forward_pre_hook(lambda *_, s=stage: self._start(s))
            module.register_forward_hook(lambda *_, s=stage: self._stop(s))
        # The mask head runs from its ROIAlign to the end of the RoI heads' call.
        heads.mask_roi_pool.register_forward_pre_hook(lambda *_: self._start("mask head"))
        postprocess = model.transform.postprocess

        def timed_postprocess(*args, **kwargs):
            self._start("mask pasting")
            try:
                return postprocess(*args, **kwargs)
            finally:
                self._stop("mask pasting")

        model.transform.postprocess = timed_postprocess

    def _start(self, stage: str) -> None:
        wait_for_device()  # a GPU's queued work belongs to the stage before
        self._started[stage] = time.perf_counter()

    def _stop(self, stage: str) -> None:
        wait_for_device()
        now = time.perf_counter()
        self.seconds[stage] = now - self._started[stage]
        if stage == "roi heads":
            self.seconds["mask head"] = now - self._started["mask head"]

    def stages(self) -> dict[str, float]:
        seconds = dict(self.seconds)
        seconds["box head and selection"] = seconds.pop("roi heads") - seconds["mask head"]
        return {stage: seconds[stage] for stage in STAGES}


def torchvision_cells(args) -> dict[str, dict[str, float]]:
    import torch

    model = torchvision_model()
    convert_weights(model, args.workdir)
    model.to(torch_device())
    clock = TorchvisionClock(model)
    cells = {}
    for name, photo in photos().items():
        tensor = torchvision_input(photo)
        runs = []
        for _ in range(1 + args.repeats):
            start = time.perf_counter()
            with torch.inference_mode():
                found = model([tensor])[0]
            wait_for_device()
            runs.append({**clock.stages(), WHOLE: time.perf_counter() - start})
        cells[name] = {**medians(runs[1:]), "detections": len(found["boxes"])}
    return cells


# ---------------------------------------------------------------------------------------------
# A Keras backend: the model's stages one after another, each compiled as detect compiles.


def keras_stage_functions(model) -> dict[str, Callable]:
    """The stages between ``prepare_photo`` and ``photo_detections``, in order: functions of the
    model's ``inputs`` and the stages' outputs so far (a dict), each returning what it adds
    (nothing passes through a compiled function only to come out again)."""

    def view(inputs):
        return model._view(inputs["images"], inputs["image_sizes"])

    def backbone(inputs, _):
        return {"maps": model._backbone_maps(inputs["images"], view(inputs), False)}

    def fpn(inputs, state):
        return {"features": model._pyramid(state["maps"], view(inputs))}

    def proposals(inputs, state):
        objectness, deltas = model.rpn_head(state["features"], valid_sizes=view(inputs).padded)
        _, kept = model._proposals(objectness, deltas, view(inputs), training=False)
        return {"proposals": kept}

    def box_head(inputs, state):
        found = model._box_detections(state["features"], state["proposals"], view(inputs))
        return {"detections": found}

    def mask_head(inputs, state):
        found = state["detections"]
        return {"masks": model._detection_masks(state["features"], view(inputs), found)}

    return dict(zip(STAGES[1:-1], (backbone, fpn, proposals, box_head, mask_head), strict=True))


def compiled(model, fn: Callable) -> Callable:
    """``fn`` compiled as the backend compiles ``detect``'s model call, returning when done."""
    import keras

    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        return tf.function(fn)
    if backend == "jax":
        import jax

        variables = model.variables

        def pure(values, *args):
            with keras.StatelessScope(state_mapping=list(zip(variables, values, strict=True))):
                return fn(*args)

        jitted = jax.jit(pure)
        return lambda *args: jax.block_until_ready(jitted([v.value for v in variables], *args))
    import torch

    def eager(*args):
        with torch.no_grad():
            out = fn(*args)
        wait_for_device()
        return out

    return eager


def keras_photo_stages(model, functions: dict, photo) -> tuple[dict[str, float], dict]:
    """One photo through ``prepare_photo``, the compiled stages and ``photo_detections``: the
    seconds of each stage and the detections."""
    import keras

    from lambda_keras.detection.detect import photo_detections, prepare_photo

    seconds = {}
    start = time.perf_counter()
    prepared = prepare_photo(model, photo)
    if keras.backend.backend() == "torch":
        wait_for_device()
    seconds["preprocess"] = time.perf_counter() - start
    state = {}
    for stage, fn in functions.items():
        start = time.perf_counter()
        state.update(fn(prepared.inputs, state))
        seconds[stage] = time.perf_counter() - start
    start = time.perf_counter()
    found = photo_detections(prepared, {**state["detections"], "masks": state["masks"]})
    seconds["mask pasting"] = time.perf_counter() - start
    return seconds, found


def keras_cells(args) -> dict[str, dict[str, float]]:
    from lambda_keras.detection import detect, maskrcnn_resnet50_fpn

    weights = os.path.join(args.workdir, "converted.weights.h5")
    model = maskrcnn_resnet50_fpn(weights=weights if os.path.exists(weights) else None)
    functions = {
        stage: compiled(model, fn) for stage, fn in keras_stage_functions(model).items()
    }
    cells = {}
    for name, photo in photos().items():
        runs = []
        for _ in range(1 + args.repeats):
            seconds, found = keras_photo_stages(model, functions, photo)
            runs.append(seconds)
        whole = median_seconds(lambda p=photo: detect(model, p), args.repeats, warmups=1)
        detections = int(found["num_detections"])
        cells[name] = {**medians(runs[1:]), WHOLE: whole, "detections": detections}
    return cells


def child(args) -> None:
    if args.child == "torchvision":
        import torch

        torch.set_num_threads(args.threads)
        cells = torchvision_cells(args)
    else:
        if args.child == "torch":
            import torch  # before TensorFlow: the other order segfaults

            torch.set_num_threads(args.threads)
        cells = keras_cells(args)
    print(json.dumps(cells))


# ---------------------------------------------------------------------------------------------
# In the parent: one child per column (torchvision first: it writes the converted weights).


def stages_table(results: dict, columns: list[str]) -> Table:
    table = Table(
        "stages",
        "maskrcnn_resnet50_fpn at torchvision's preprocessing, seconds per stage of one photo",
        ["photo", "stage", *columns],
        digits=[0, 0, *[3] * len(columns)],
        labels=2,
    )
    table.print_header()
    for name in PHOTOS:
        for stage in (*STAGES, SUM, WHOLE, "detections"):
            cells = []
            for column in columns:
                found = results[column].get(name, {})
                if stage == SUM and found:
                    cells.append(sum(found[s] for s in STAGES))
                else:
                    cells.append(found.get(stage))
            table.add(name, stage, *cells)
    if "torchvision" not in columns:
        table.note("torchvision not installed: the Keras models keep their own random weights.")
    return table


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", type=names(KERAS_BACKENDS), default=["tensorflow"])
    add_column_arguments(parser)
    return parser.parse_args(argv)


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse(argv)
    if args.child:
        child(args)
        return
    measure_columns(__file__, ["torchvision", *args.backends], args, argv, write_table)


def write_table(results: dict, columns: list[str], missing: list[str], args) -> None:
    table = stages_table(results, columns)
    if missing:
        table.note(f"not installed, left out: {', '.join(missing)}")
    failed = [c for c in columns if not results[c]]
    if failed:
        table.note(f"failed (empty cells, message above): {', '.join(failed)}")
    if args.glibc_heap:
        table.note(glibc_heap_note())
    settings = {"threads": args.threads, "repeats": args.repeats, "glibc_heap": args.glibc_heap}
    write(args.output, "bench_detection_stages", [table], **settings)


if __name__ == "__main__":
    main()
