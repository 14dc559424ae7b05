"""NMS's contract, on the backend this run uses: TensorFlow's kernel (``ops.nms`` there) and the
``keras.ops`` greedy loop (``ops.greedy_nms``, what ``ops.nms`` runs on JAX and PyTorch)."""

import functools

import numpy as np
import pytest

from lambda_keras.detection import ops
from tests.backend import BACKEND, compiled, numpy
from tests.detection.ops import reference
from tests.detection.ops.test_boxes import _random_boxes

# Both implementations where both exist; elsewhere ops.nms is the greedy loop.
IMPLEMENTATIONS = ["nms", "greedy_nms"] if BACKEND == "tensorflow" else ["nms"]


@pytest.fixture(params=IMPLEMENTATIONS)
def nms(request):
    return getattr(ops, request.param)


def kept(indices, valid):
    return numpy(indices)[numpy(valid)].tolist()


@pytest.mark.parametrize("threshold", [0.3, 0.5, 0.7])
def test_matches_greedy_nms(nms, threshold):
    rng = np.random.default_rng(int(threshold * 10))
    boxes = _random_boxes(rng, 60, size=50.0)
    scores = rng.permutation(60).astype("float32") / 60  # distinct scores: one greedy order
    indices, valid = nms(boxes, scores, max_output_size=40, iou_threshold=threshold)
    assert kept(indices, valid) == reference.greedy_nms(boxes, scores, threshold, 40)
    assert (numpy(indices)[~numpy(valid)] == 0).all()


def test_batched_padding_score_threshold_and_compiled(nms):
    boxes = np.array(
        [[[0, 0, 10, 10], [0, 0, 10, 9], [20, 20, 30, 30]], [[0, 0, 1, 1]] * 3], "float32"
    )
    scores = np.array([[0.9, 0.8, 0.7], [0.1, 0.05, 0.01]], "float32")
    run = compiled(lambda b, s: nms(b, s, 4, iou_threshold=0.5, score_threshold=0.2))
    indices, valid = run(boxes, scores)
    assert tuple(indices.shape) == (2, 4)
    assert kept(indices[0], valid[0]) == [0, 2]
    assert not numpy(valid)[1].any()  # every score under the threshold: nothing, no crash


def test_batched_nms_keeps_overlapping_boxes_of_other_classes():
    boxes = np.array([[0, 0, 10, 10], [0, 0, 10, 10], [0, 0, 10, 10]], "float32")
    scores = np.array([0.9, 0.8, 0.7], "float32")
    indices, valid = ops.batched_nms(boxes, scores, [1, 2, 1], max_output_size=3)
    assert kept(indices, valid) == [0, 1]


def test_bad_arguments_are_named(nms):
    with pytest.raises(ValueError, match="max_output_size"):
        nms(np.zeros((2, 4)), np.zeros(2), max_output_size=0)
    with pytest.raises(ValueError, match="iou_threshold"):
        nms(np.zeros((2, 4)), np.zeros(2), max_output_size=2, iou_threshold=1.5)
    with pytest.raises(ValueError, match="`scores` must have shape"):
        nms(np.zeros((2, 4)), np.zeros((2, 2)), max_output_size=2)


@pytest.mark.parametrize("threshold, second", [(0.5, [0, 0, 10, 5]), (0.7, [0, 0, 10, 7])])
def test_iou_equal_to_the_threshold_keeps_the_box(nms, threshold, second):
    """The contract (and torchvision): dropped when the IoU is greater than the threshold."""
    boxes = np.array([[0, 0, 10, 10], second], "float32")
    scores = np.array([0.9, 0.8], "float32")
    run = compiled(lambda b, s: nms(b, s, max_output_size=5, iou_threshold=threshold))
    assert kept(*nms(boxes, scores, 5, iou_threshold=threshold)) == [0, 1]
    assert kept(*run(boxes, scores)) == [0, 1]
    # A hair above the IoU, the box goes.
    assert kept(*nms(boxes, scores, 5, iou_threshold=threshold - 1e-3)) == [0]


def test_boxes_at_or_below_zero_are_kept_and_returned(nms):
    boxes = np.array([[-20, -20, -10, -10], [5, 5, 15, 15], [0, 0, 0, 0]], "float32")
    scores = np.array([0.9, 0.8, 0.7], "float32")
    assert kept(*nms(boxes, scores, 5)) == [0, 1, 2]
    assert kept(*compiled(lambda b, s: nms(b, s, 5))(boxes, scores)) == [0, 1, 2]


def test_an_inverted_box_overlaps_nothing_and_changes_no_other_box(nms):
    first = [[10, 10, 0, 0], [20, 20, 30, 30], [21, 21, 31, 31]]
    second = [[0, 0, 10, 10], [1, 1, 11, 11], [50, 50, 60, 60]]
    boxes = np.array([first, second], "float32")
    scores = np.array([[0.5, 0.9, 0.8], [0.9, 0.8, 0.7]], "float32")
    indices, valid = nms(boxes, scores, 5)
    assert kept(indices[0], valid[0]) == [1, 0]  # 2 suppressed by 1 (IoU 0.68)
    assert kept(indices[1], valid[1]) == [0, 2]  # 1 suppressed by 0 (IoU 0.68)


@pytest.mark.parametrize("shape", [(0, 4), (2, 0, 4)])
def test_zero_boxes_give_padding(nms, shape):
    boxes, scores = np.zeros(shape, "float32"), np.zeros(shape[:-1], "float32")
    indices, valid = nms(boxes, scores, 3)
    assert tuple(indices.shape) == (*shape[:-2], 3) and not numpy(valid).any()
    indices, valid = ops.batched_nms(boxes, scores, np.zeros(shape[:-1], "int32"), 3)
    assert not numpy(valid).any()


@pytest.mark.tensorflow
def test_zero_boxes_in_a_compiled_function_of_unknown_size(nms):
    import tensorflow as tf

    run = tf.function(
        lambda b, s: nms(b, s, 3),
        jit_compile=True,
        input_signature=[tf.TensorSpec((None, 4)), tf.TensorSpec((None,))],
    )
    indices, valid = run(tf.zeros((0, 4)), tf.zeros((0,)))
    assert indices.shape == (3,) and not valid.numpy().any()
    assert kept(*run(tf.constant([[0, 0, 10, 10.0]]), tf.constant([0.5]))) == [0]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_greedy_nms_with_inverted_and_negative_boxes(nms, seed):
    rng = np.random.default_rng(seed)
    boxes = _random_boxes(rng, 80, size=40.0) - 20.0  # half the boxes reach below zero
    flip = rng.random(80) < 0.2
    boxes[flip] = boxes[flip][:, [2, 3, 0, 1]]  # inverted corners
    scores = rng.permutation(80).astype("float32") / 80
    indices, valid = nms(boxes, scores, max_output_size=60, iou_threshold=0.4)
    assert kept(indices, valid) == reference.greedy_nms(boxes, scores, 0.4, 60)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_score_threshold_keeps_the_decreasing_score_order(nms, seed):
    """torchvision's nms on the boxes scoring above the threshold, in its (score) order."""
    rng = np.random.default_rng(seed)
    boxes = reference.clustered_boxes(rng, 150)
    scores = rng.permutation(150).astype("float32") / 150
    above = np.flatnonzero(scores > 0.3)
    expected = above[reference.greedy_nms(boxes[above], scores[above], 0.5, 150)].tolist()
    assert kept(*nms(boxes, scores, 150, 0.5, score_threshold=0.3)) == expected
    assert np.all(np.diff(scores[expected]) < 0) and len(expected) > 20
    # batched_nms with one class is nms; with two classes, each class's greedy NMS, merged by score.
    classes = np.zeros(150, "int32")
    assert kept(*ops.batched_nms(boxes, scores, classes, 150, 0.5, 0.3)) == expected
    classes = rng.integers(0, 2, 150).astype("int32")
    per_class = []
    for c in (0, 1):
        members = above[classes[above] == c]
        greedy = reference.greedy_nms(boxes[members], scores[members], 0.5, 150)
        per_class += members[greedy].tolist()
    merged = sorted(per_class, key=lambda i: -scores[i])
    assert kept(*ops.batched_nms(boxes, scores, classes, 150, 0.5, 0.3)) == merged


def test_a_score_threshold_with_negative_scores_compiled(nms):
    """Scores below zero and a threshold below zero: the same set and order, also compiled."""
    rng = np.random.default_rng(3)
    boxes = reference.clustered_boxes(rng, 150)
    scores = rng.permutation(150).astype("float32") / 150 - 0.9
    above = np.flatnonzero(scores > -0.6)
    expected = above[reference.greedy_nms(boxes[above], scores[above], 0.5, 40)].tolist()
    run = compiled(lambda b, s: nms(b, s, 40, 0.5, -0.6))
    assert kept(*nms(boxes, scores, 40, 0.5, score_threshold=-0.6)) == expected
    assert kept(*run(boxes, scores)) == expected


def test_fewer_boxes_than_the_output_size_and_all_kept(nms):
    """More slots than boxes: every box kept once, in score order, the rest padding."""
    boxes = np.array([[0, 0, 10, 10], [20, 20, 30, 30], [40, 40, 50, 50]], "float32")
    scores = np.array([0.2, 0.9, 0.5], "float32")
    indices, valid = nms(boxes, scores, 8)
    assert kept(indices, valid) == [1, 2, 0]
    assert numpy(valid).sum() == 3 and (numpy(indices)[3:] == 0).all()


NAN, INF = float("nan"), float("inf")
BASE = [[0, 0, 10, 10], [1, 1, 10, 10], [20, 20, 30, 30], [21, 21, 30, 30]]  # two pairs, IoU .81
# (boxes, scores, what torchvision 0.29.1's ops.nms keeps at IoU 0.5), run by hand on these boxes
# (x and y swapped); torchvision_comparison.py checks random cases against it live.
NON_FINITE = {
    "nan_score_first": (BASE, [NAN, 0.9, 0.8, 0.7], [0, 2]),
    "nan_score_ranks_first": (BASE, [0.9, 0.8, NAN, 0.7], [2, 0]),
    "nan_above_inf": (BASE, [INF, NAN, 0.8, 0.7], [1, 2]),
    "two_nans_by_index": (BASE, [NAN, NAN, 0.8, 0.7], [0, 2]),
    "inf_score": (BASE, [0.9, INF, 0.8, 0.7], [1, 2]),
    "minus_inf_score_kept": (BASE, [0.9, 0.8, -INF, 0.7], [0, 3]),
    "minus_inf_score_first_box": (BASE, [-INF, 0.9, 0.8, 0.7], [1, 2]),
    "nan_box_first": ([[NAN, 0, 10, 10], *BASE[1:]], [0.95, 0.9, 0.8, 0.7], [0, 1, 2]),
    "nan_box_second": ([BASE[0], [NAN, 1, 10, 10], *BASE[2:]], [0.95, 0.9, 0.8, 0.7], [0, 1, 2]),
    "inf_box": ([[0, 0, INF, 10], *BASE[1:]], [0.95, 0.9, 0.8, 0.7], [0, 1, 2]),
    "minus_inf_box": ([BASE[0], [-INF, 1, 10, 10], *BASE[2:]], [0.95, 0.9, 0.8, 0.7], [0, 1, 2]),
}


@functools.cache  # one compiled function per implementation: the cases share their shapes
def _compiled_keep_four(nms):
    return compiled(lambda b, s: nms(b, s, 4))


@pytest.mark.parametrize("case", sorted(NON_FINITE))
def test_non_finite_scores_and_boxes_as_torchvision(nms, case):
    boxes, scores, expected = NON_FINITE[case]
    boxes, scores = np.array(boxes, "float32"), np.array(scores, "float32")
    assert kept(*nms(boxes, scores, 4)) == expected
    assert kept(*_compiled_keep_four(nms)(boxes, scores)) == expected
    # Batched: each image on its own, whatever the other holds.
    indices, valid = nms(np.stack([boxes, np.array(BASE, "float32")]), np.stack([scores] * 2), 4)
    assert kept(indices[0], valid[0]) == expected


def test_a_score_threshold_drops_nan_and_minus_inf_scores(nms):
    scores = np.array([NAN, 0.9, -INF, 0.7], "float32")
    boxes = np.array(BASE, "float32")
    assert kept(*nms(boxes, scores, 4)) == [0, 3]  # no threshold: NaN first, suppressing 1
    assert kept(*nms(boxes, scores, 4, score_threshold=0.0)) == [1, 3]
    assert kept(*nms(boxes, scores, 4, score_threshold=-INF)) == [1, 3]


def test_batched_nms_a_non_finite_box_leaves_its_class_suppressing():
    boxes = np.array([*BASE, [NAN, 0, 10, 10], [0, 0, INF, 10]], "float32")
    scores = np.array([0.9, 0.8, 0.7, 0.6, 0.95, 0.5], "float32")
    classes = np.array([0, 0, 1, 1, 0, 1], "int32")
    # torchvision's per-class loop (its batched_nms on many boxes) keeps [4, 0, 2, 5].
    assert kept(*ops.batched_nms(boxes, scores, classes, 6)) == [4, 0, 2, 5]


@pytest.mark.parametrize("threshold", [NAN, "0.5", True])
def test_a_score_threshold_that_is_not_a_number_is_refused(nms, threshold):
    with pytest.raises(ValueError, match="`score_threshold` must be None"):
        nms(np.zeros((2, 4)), np.zeros(2), 2, score_threshold=threshold)
