"""Non-maximum suppression with fixed-size, padded outputs (static shapes for XLA and TPUs), on
every Keras backend.

Three implementations keep one contract (:func:`nms`): on the TensorFlow backend TensorFlow's
``tf.image.non_max_suppression_padded`` kernel (fast in graphs and under XLA); on PyTorch, where
torchvision is installed, torchvision's ``ops.nms`` kernel padded to the static size; elsewhere a
greedy loop in ``keras.ops`` (:func:`greedy_nms`): sort once, then, at most ``max_output_size``
times, keep the best box still alive and drop every box it overlaps by more than the threshold.
The loop stops early once no box is alive (``keras.ops.while_loop``: ``lax.while_loop`` under
``jax.jit``, a Python loop on PyTorch).
"""

from __future__ import annotations

import keras
import numpy as np
from keras import ops

from lambda_keras import _validation as v
from lambda_keras.detection.ops import _checks
from lambda_keras.detection.ops._checks import Tensor
from lambda_keras.detection.ops.boxes import box_iou

__all__ = ["batched_nms", "greedy_nms", "nms"]


def nms(
    boxes: Tensor,
    scores: Tensor,
    max_output_size: int,
    iou_threshold: float = 0.5,
    score_threshold: float = float("-inf"),
) -> tuple[Tensor, Tensor]:
    """Greedy NMS, padded: the highest-scoring box is kept, every box whose IoU with it is
    greater than ``iou_threshold`` is dropped, and so on down the scores (torchvision's rule;
    IoU as :func:`box_iou`: an empty or inverted box overlaps nothing). Any box may be kept,
    wherever it lies; zero boxes give only padding. Eager, compiled (``jax.jit``,
    ``tf.function(jit_compile=True)``) and on every Keras backend.

    Args:
        boxes: ``[..., n, 4]`` boxes ``(y1, x1, y2, x2)`` (any leading batch dimensions).
        scores: ``[..., n]``.
        max_output_size: How many boxes to keep at most (the padded output size).
        iou_threshold: Boxes overlapping a kept box by more than this are dropped.
        score_threshold: Boxes scoring at most this are dropped.

    Returns:
        ``(indices, valid)``: ``[..., max_output_size]`` int32 indices into the ``n`` boxes, in
        decreasing score order, and ``[..., max_output_size]`` bool, True for a kept box; the
        padding has ``valid=False`` and index 0.
    """
    boxes, scores, max_output_size = _arguments(boxes, scores, max_output_size, iou_threshold)
    if keras.backend.backend() == "tensorflow":
        from lambda_keras.detection.ops import nms_tensorflow

        return nms_tensorflow.nms(boxes, scores, max_output_size, iou_threshold, score_threshold)
    if keras.backend.backend() == "torch":
        from lambda_keras.detection.ops import nms_torchvision

        if nms_torchvision.available():
            return nms_torchvision.nms(
                boxes, scores, max_output_size, iou_threshold, score_threshold
            )
    return _greedy(boxes, scores, max_output_size, iou_threshold, score_threshold)


def greedy_nms(
    boxes: Tensor,
    scores: Tensor,
    max_output_size: int,
    iou_threshold: float = 0.5,
    score_threshold: float = float("-inf"),
) -> tuple[Tensor, Tensor]:
    """:func:`nms` in ``keras.ops`` on every backend (what :func:`nms` runs on JAX, and on
    PyTorch without torchvision; on TensorFlow, :func:`nms` runs TensorFlow's kernel). Same
    arguments and results."""
    boxes, scores, max_output_size = _arguments(boxes, scores, max_output_size, iou_threshold)
    return _greedy(boxes, scores, max_output_size, iou_threshold, score_threshold)


def _arguments(boxes, scores, max_output_size, iou_threshold):
    max_output_size = v.positive_int("max_output_size", max_output_size)
    v.number_in("iou_threshold", iou_threshold, 0.0, 1.0)
    boxes = _checks.boxes("boxes", boxes, layout="[..., n, 4]")
    rank = None if _checks.rank(boxes) is None else _checks.rank(boxes) - 1
    scores = _checks.tensor("scores", scores, rank, "[..., n]")
    if rank is not None:
        _checks.same_sizes("boxes", boxes, "scores", scores, axes=rank)
    return boxes, scores, max_output_size


def _greedy(boxes, scores, max_output_size, iou_threshold, score_threshold):
    shape = ops.shape(scores)
    leading, count = tuple(shape[:-1]), shape[-1]
    batch = 1
    for size in leading:  # not -1 in the reshapes: zero boxes would leave it ambiguous
        batch = batch * size
    boxes = ops.reshape(boxes, (batch, count, 4))
    scores = ops.reshape(scores, (batch, count))
    order = ops.cast(ops.argsort(-scores, axis=-1), "int32")  # decreasing scores
    alive = ops.take_along_axis(scores, order, axis=1) > score_threshold
    # One more box, last and never alive: zero boxes (even of a size known only at run time)
    # still give the argmax below something to point at.
    boxes = ops.concatenate(
        [ops.take_along_axis(boxes, order[..., None], axis=1), ops.zeros((batch, 1, 4))], 1
    )
    alive = ops.concatenate([alive, ops.zeros((batch, 1), "bool")], 1)
    order = ops.concatenate([order, ops.zeros((batch, 1), "int32")], 1)
    positions = ops.arange(count + 1, dtype="int32")[None, :]
    slots = ops.arange(max_output_size, dtype="int32")[None, :]
    # Float32 IoU as box_iou computes it, compared as torchvision compares it (> threshold).
    threshold = float(np.float32(iou_threshold))

    def keep_next(step, alive, picks, valid):
        pick = ops.cast(ops.argmax(ops.cast(alive, "int32"), axis=-1), "int32")  # [B]
        found = ops.take_along_axis(alive, pick[:, None], axis=1)  # [B, 1]
        box = ops.take_along_axis(boxes, pick[:, None, None], axis=1)  # [B, 1, 4]
        overlap = box_iou(box, boxes)[:, 0]  # [B, n]
        alive = alive & (overlap <= threshold) & (positions != pick[:, None])
        here = slots == step
        picks = ops.where(here, pick[:, None], picks)
        valid = ops.where(here, found, valid)
        return step + 1, alive, picks, valid

    def more(step, alive, picks, valid):
        return ops.logical_and(step < max_output_size, ops.any(alive))

    start = (
        ops.convert_to_tensor(0, "int32"),
        alive,
        ops.zeros((batch, max_output_size), "int32"),
        ops.zeros((batch, max_output_size), "bool"),
    )
    _, _, picks, valid = ops.while_loop(more, keep_next, start)
    indices = ops.where(valid, ops.take_along_axis(order, picks, axis=1), 0)
    padded = (*leading, max_output_size)
    return ops.reshape(indices, padded), ops.reshape(valid, padded)


def batched_nms(
    boxes: Tensor,
    scores: Tensor,
    classes: Tensor,
    max_output_size: int,
    iou_threshold: float = 0.5,
    score_threshold: float = float("-inf"),
) -> tuple[Tensor, Tensor]:
    """Per-class NMS in one pass: boxes of different classes never suppress each other.

    Each class's boxes are shifted by ``class * (largest coordinate + 1)`` so that boxes of
    different classes cannot overlap, then :func:`nms` runs once (torchvision's
    ``batched_nms`` trick).

    Args:
        boxes: ``[..., n, 4]``; scores: ``[..., n]``; classes: ``[..., n]`` integer classes.

    Returns:
        As :func:`nms`.
    """
    boxes = _checks.boxes("boxes", boxes, layout="[..., n, 4]")
    classes = ops.convert_to_tensor(classes)
    rank = _checks.rank(boxes)
    if rank is not None:
        classes = _checks.tensor("classes", classes, rank - 1, "[..., n]", None)
        _checks.same_sizes("boxes", boxes, "classes", classes, axes=rank - 1)
    if rank is not None and boxes.shape[-2] == 0:
        offset = 1.0  # no boxes: nothing to shift (the maximum of nothing is an error)
    else:
        offset = ops.max(ops.abs(boxes)) + 1.0
    shifted = boxes + (ops.cast(classes, "float32") * offset)[..., None]
    return nms(shifted, scores, max_output_size, iou_threshold, score_threshold)
