"""Non-maximum suppression with fixed-size, padded outputs (static shapes for XLA and TPUs), on
every Keras backend.

One step is shared (``_ranked``): the boxes are put in the contract's order (decreasing score, a
NaN score first, ties by index), boxes with a non-finite coordinate become empty and the score
threshold marks which boxes take part. Three kernels then suppress, in that order: on the
TensorFlow backend TensorFlow's ``tf.image.non_max_suppression_padded`` (fast in graphs and under
XLA); on PyTorch, where torchvision is installed, torchvision's ``ops.nms``; elsewhere a greedy
loop in ``keras.ops`` ([`greedy_nms`][lambda_keras.detection.ops.greedy_nms]): at most
``max_output_size`` times, keep the first box still alive and drop every box it overlaps by more
than the threshold. The loop stops early once no box is alive (``keras.ops.while_loop``:
``lax.while_loop`` under ``jax.jit``, a Python loop on PyTorch).
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
    score_threshold: float | None = None,
) -> tuple[Tensor, Tensor]:
    """Greedy NMS, padded: the highest-scoring box is kept, every box whose IoU with it is
    greater than ``iou_threshold`` is dropped, and so on down the scores (torchvision's rule;
    IoU as [box_iou][lambda_keras.detection.ops.box_iou]: an empty or inverted box overlaps
    nothing). Any box may be kept, wherever it lies; zero boxes give only padding. Eager,
    compiled (``jax.jit``, ``tf.function(jit_compile=True)``) and on every Keras backend.

    Non-finite values do what they do in torchvision's ``ops.nms`` (checked against it):

    * A NaN score ranks above every number, ``+inf`` included (torchvision's descending sort);
      ``+inf`` and ``-inf`` scores rank as the numbers they are. Equal scores (and NaN scores
      among themselves) go by index, the lower first.
    * A box with a NaN or infinite coordinate overlaps nothing (torchvision's IoU with it is
      NaN, 0 or -0, never above a threshold): it is kept in its score's place and suppresses no
      box.
    * With a ``score_threshold``, a box is kept only if its score is greater than it, so a NaN
      score is dropped (as torchvision's detectors filter their scores); without one (None),
      every box takes part, whatever its score.

    Args:
        boxes: ``[..., n, 4]`` boxes ``(y1, x1, y2, x2)`` (any leading batch dimensions).
        scores: ``[..., n]``.
        max_output_size: How many boxes to keep at most (the padded output size).
        iou_threshold: Boxes overlapping a kept box by more than this are dropped.
        score_threshold: Boxes scoring at most this (or NaN) are dropped; None: none is.

    Returns:
        ``(indices, valid)``: ``[..., max_output_size]`` int32 indices into the ``n`` boxes, in
        the order above, and ``[..., max_output_size]`` bool, True for a kept box; the padding
        has ``valid=False`` and index 0.

    Examples:
        >>> import keras
        >>> import numpy as np
        >>> from lambda_keras.detection import ops
        >>> boxes = np.array(
        ...     [[0, 0, 10, 10], [1, 1, 10, 10], [20, 20, 30, 30]], "float32"
        ... )
        >>> scores = np.array([0.9, 0.8, 0.7], "float32")
        >>> indices, valid = ops.nms(boxes, scores, 3)
        >>> indices = keras.ops.convert_to_numpy(indices)
        >>> indices[keras.ops.convert_to_numpy(valid)].tolist()
        [0, 2]
    """
    args = _arguments(boxes, scores, max_output_size, iou_threshold, score_threshold)
    if keras.backend.backend() == "tensorflow":
        from lambda_keras.detection.ops import nms_tensorflow

        return _run(nms_tensorflow.suppress, *args)
    if keras.backend.backend() == "torch":
        from lambda_keras.detection.ops import nms_torchvision

        if nms_torchvision.available():
            return _run(nms_torchvision.suppress, *args)
    return _run(_greedy, *args)


def greedy_nms(
    boxes: Tensor,
    scores: Tensor,
    max_output_size: int,
    iou_threshold: float = 0.5,
    score_threshold: float | None = None,
) -> tuple[Tensor, Tensor]:
    """[nms][lambda_keras.detection.ops.nms] in ``keras.ops`` on every backend (what it runs on
    JAX, and on PyTorch without torchvision; on TensorFlow it runs TensorFlow's kernel). Same
    arguments and results."""
    args = _arguments(boxes, scores, max_output_size, iou_threshold, score_threshold)
    return _run(_greedy, *args)


def _arguments(boxes, scores, max_output_size, iou_threshold, score_threshold):
    max_output_size = v.positive_int("max_output_size", max_output_size)
    iou_threshold = v.number_in("iou_threshold", iou_threshold, 0.0, 1.0)
    score_threshold = v.number_or_none("score_threshold", score_threshold, "no score drops a box")
    boxes = _checks.boxes("boxes", boxes, layout="[..., n, 4]")
    rank = None if _checks.rank(boxes) is None else _checks.rank(boxes) - 1
    scores = _checks.tensor("scores", scores, rank, "[..., n]")
    if rank is not None:
        _checks.same_sizes("boxes", boxes, "scores", scores, axes=rank)
    return boxes, scores, max_output_size, iou_threshold, score_threshold


def _run(suppress, boxes, scores, max_output_size, iou_threshold, score_threshold):
    """Flattens the leading dimensions, ranks the boxes (``_ranked``), lets ``suppress`` pick among
    them and maps its picks back to the caller's indices.

    ``suppress(boxes [B, n, 4], alive [B, n], max_output_size, iou_threshold)`` gets the boxes
    in rank order and returns ``(positions, valid)`` ``[B, max_output_size]``: the kept
    positions in that order."""
    shape = ops.shape(scores)
    leading, count = tuple(shape[:-1]), shape[-1]
    batch = 1
    for size in leading:  # not -1 in the reshapes: zero boxes would leave it ambiguous
        batch = batch * size
    boxes = ops.reshape(ops.cast(boxes, "float32"), (batch, count, 4))
    scores = ops.reshape(ops.cast(scores, "float32"), (batch, count))
    order, boxes, alive = _ranked(boxes, scores, score_threshold)
    positions, valid = suppress(boxes, alive, max_output_size, iou_threshold)
    # One index more for the padding to point at: zero boxes give padding, not a gather error.
    order = ops.concatenate([order, ops.zeros((batch, 1), "int32")], 1)
    indices = ops.where(valid, ops.take_along_axis(order, positions, axis=1), 0)
    padded = (*leading, max_output_size)
    return ops.reshape(indices, padded), ops.reshape(valid, padded)


def _ranked(boxes, scores, score_threshold):
    """``(order, boxes, alive)``: ``[B, n]`` indices in the contract's order (decreasing score,
    NaN first, ties by index: both sorts are stable on every backend), the boxes ``[B, n, 4]``
    in that order with a non-finite box made empty (all zero), and ``[B, n]`` whether each
    takes part (its score is above ``score_threshold``)."""
    nan = ops.isnan(scores)
    order = ops.argsort(ops.where(nan, float("inf"), scores) * -1.0, axis=-1)
    not_nan = ops.take_along_axis(ops.cast(~nan, "int32"), order, axis=1)
    order = ops.cast(ops.take_along_axis(order, ops.argsort(not_nan, axis=-1), axis=1), "int32")
    boxes = ops.take_along_axis(boxes, order[..., None], axis=1)
    finite = ops.all(ops.isfinite(boxes), axis=-1, keepdims=True)
    boxes = ops.where(finite, boxes, 0.0)
    if score_threshold is None:
        alive = ops.ones(ops.shape(order), "bool")
    else:
        alive = ops.take_along_axis(scores, order, axis=1) > score_threshold
    return order, boxes, alive


def _greedy(boxes, alive, max_output_size, iou_threshold):
    batch, count = ops.shape(alive)[0], ops.shape(alive)[1]
    # One more box, last and never alive: zero boxes (even of a size known only at run time)
    # still give the argmax below something to point at.
    boxes = ops.concatenate([boxes, ops.zeros((batch, 1, 4))], 1)
    alive = ops.concatenate([alive, ops.zeros((batch, 1), "bool")], 1)
    positions = ops.arange(count + 1, dtype="int32")[None, :]
    slots = ops.arange(max_output_size, dtype="int32")[None, :]
    # Float32 IoU as box_iou computes it, compared as torchvision compares it (> threshold).
    threshold = float(np.float32(iou_threshold))

    def keep_next(step, alive, picks, valid):
        pick = ops.cast(ops.argmax(ops.cast(alive, "int32"), axis=-1), "int32")  # [B]
        found = ops.take_along_axis(alive, pick[:, None], axis=1)  # [B, 1]
        box = ops.take_along_axis(boxes, pick[:, None, None], axis=1)  # [B, 1, 4]
        overlap = box_iou(box, boxes)[:, 0]  # [B, n]
        # Not `overlap <= threshold`: a NaN IoU (boxes whose areas overflow float32) does not
        # suppress, as in torchvision.
        alive = alive & ~(overlap > threshold) & (positions != pick[:, None])
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
    return ops.where(valid, picks, 0), valid


def batched_nms(
    boxes: Tensor,
    scores: Tensor,
    classes: Tensor,
    max_output_size: int,
    iou_threshold: float = 0.5,
    score_threshold: float | None = None,
) -> tuple[Tensor, Tensor]:
    """Per-class NMS in one pass: boxes of different classes never suppress each other.

    Each class's boxes are shifted by ``class * (largest finite coordinate + 1)`` so that boxes
    of different classes cannot overlap, then [nms][lambda_keras.detection.ops.nms] runs once
    (torchvision's ``batched_nms`` trick), with its rules for non-finite scores and boxes: a box
    with a NaN or infinite coordinate overlaps nothing, and the other boxes of its class still
    suppress each other. (torchvision's own trick takes the largest coordinate of all boxes: one
    non-finite box makes every shifted box NaN and nothing is suppressed, while its per-class
    loop, which it runs for many boxes on CPU, keeps the rule above.)

    Args:
        boxes: ``[..., n, 4]``; scores: ``[..., n]``; classes: ``[..., n]`` integer classes.

    Returns:
        As [nms][lambda_keras.detection.ops.nms].
    """
    boxes = _checks.boxes("boxes", boxes, layout="[..., n, 4]")
    classes = ops.convert_to_tensor(classes)
    rank = _checks.rank(boxes)
    if rank is not None:
        classes = _checks.tensor("classes", classes, rank - 1, "[..., n]", None)
        _checks.same_sizes("boxes", boxes, "classes", classes, axes=rank - 1)
    # A non-finite box becomes empty (all zero) here already: the offset must stay finite.
    boxes = ops.cast(boxes, "float32")
    boxes = ops.where(ops.all(ops.isfinite(boxes), axis=-1, keepdims=True), boxes, 0.0)
    if rank is not None and boxes.shape[-2] == 0:
        offset = 1.0  # no boxes: nothing to shift (the maximum of nothing is an error)
    else:
        offset = ops.max(ops.abs(boxes)) + 1.0
    shifted = boxes + (ops.cast(classes, "float32") * offset)[..., None]
    return nms(shifted, scores, max_output_size, iou_threshold, score_threshold)
