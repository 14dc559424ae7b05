"""generate_proposals: the best anchors per level, decoded and clipped, suppressed per level,
padded to a fixed count."""

import numpy as np

from lambda_keras.detection.proposals import generate_proposals
from tests.backend import numpy

ANCHORS = {  # (y1, x1, y2, x2)
    "P2": np.array([[0, 0, 10, 10], [0, 0, 20, 20], [0, 0, 19, 19]], "float32"),
    "P3": np.array([[5, 5, 40, 40]], "float32"),
}


def proposals(objectness, **kwargs):
    settings = {"pre_nms_top_k": 3, "post_nms_top_k": 5, **kwargs}
    boxes, valid = generate_proposals(
        np.array([objectness], "float32"),
        np.zeros((1, 4, 4), "float32"),
        ANCHORS,
        (32, 32),
        **settings,
    )
    return numpy(boxes)[0], numpy(valid)[0]


def test_the_best_anchors_come_first_clipped_and_padded():
    boxes, valid = proposals([0.1, 2.0, -1.0, 1.0])
    # [0, 0, 19, 19] overlaps [0, 0, 20, 20] at IoU 0.9025 > 0.7 on the same level: suppressed.
    np.testing.assert_array_equal(valid, [True, True, True, False, False])
    np.testing.assert_allclose(boxes[:3], [[0, 0, 20, 20], [5, 5, 32, 32], [0, 0, 10, 10]])
    np.testing.assert_array_equal(boxes[3:], 0.0)


def test_levels_do_not_suppress_each_other_and_top_k_is_per_level():
    ANCHORS["P3"][0] = [0, 0, 20, 20]  # the same box as P2's best, on another level
    try:
        boxes, valid = proposals([0.1, 2.0, -1.0, 1.0], pre_nms_top_k=1)
    finally:
        ANCHORS["P3"][0] = [5, 5, 40, 40]
    np.testing.assert_array_equal(valid, [True, True, False, False, False])
    np.testing.assert_allclose(boxes[:2], [[0, 0, 20, 20], [0, 0, 20, 20]])


def test_boxes_below_the_minimum_size_never_propose():
    boxes, valid = proposals([0.1, 2.0, -1.0, 1.0], min_size=15.0)
    np.testing.assert_array_equal(valid, [True, True, False, False, False])
    np.testing.assert_allclose(boxes[:2], [[0, 0, 20, 20], [5, 5, 32, 32]])
