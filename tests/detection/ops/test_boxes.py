import numpy as np
import pytest

from lambda_keras.detection import ops
from tests.backend import numpy
from tests.detection.ops import reference


def _random_boxes(rng, n, size=100.0):
    corners = rng.uniform(0, size, (n, 2, 2))
    corners.sort(axis=1)
    return corners.transpose(0, 2, 1).reshape(n, 4)[:, [0, 2, 1, 3]].astype("float32")


def test_iou_matches_pairwise_definition():
    rng = np.random.default_rng(0)
    a, b = _random_boxes(rng, 7), _random_boxes(rng, 5)
    b[0] = a[0]
    expected = np.array([[reference.iou(x, y) for y in b] for x in a])
    got = numpy(ops.box_iou(a, b))
    np.testing.assert_allclose(got, expected, atol=1e-6)
    assert got[0, 0] == pytest.approx(1.0)


def test_iou_known_value_batched_and_empty_union():
    a = np.array([[[0, 0, 2, 2], [5, 5, 5, 5]]], "float32")
    b = np.array([[[0, 1, 2, 3], [5, 5, 5, 5]]], "float32")
    got = numpy(ops.box_iou(a, b))
    assert got.shape == (1, 2, 2)
    assert got[0, 0, 0] == pytest.approx(1 / 3)
    assert got[0, 1, 1] == 0.0  # two empty boxes: 0, not NaN
    assert np.isfinite(got).all()


def test_encode_decode_round_trip_and_known_deltas():
    rng = np.random.default_rng(1)
    boxes, anchors = _random_boxes(rng, 20) + [0, 0, 1, 1], _random_boxes(rng, 20) + [0, 0, 1, 1]
    for weights in ((1, 1, 1, 1), (10, 10, 5, 5)):
        deltas = ops.encode_boxes(boxes, anchors, weights)
        np.testing.assert_allclose(
            numpy(ops.decode_boxes(deltas, anchors, weights)), boxes, atol=1e-3
        )
    # A box twice the anchor's height, shifted by half its height: (0.5, 0, log 2, 0).
    deltas = numpy(ops.encode_boxes([[5.0, 0.0, 25.0, 10.0]], [[0.0, 0.0, 10.0, 10.0]]))
    np.testing.assert_allclose(deltas, [[1.0, 0.0, np.log(2.0), 0.0]], atol=1e-6)


def test_decode_clips_huge_size_deltas():
    boxes = numpy(ops.decode_boxes([[0.0, 0.0, 1e4, 1e4]], [[0.0, 0.0, 16.0, 16.0]]))
    assert np.isfinite(boxes).all()
    np.testing.assert_allclose(boxes[0, 2] - boxes[0, 0], 1000.0, rtol=1e-5)


def test_clip_and_coco_conversions():
    clipped = numpy(ops.clip_boxes([[-5.0, 3.0, 50.0, 120.0]], (40, 100)))
    np.testing.assert_allclose(clipped, [[0.0, 3.0, 40.0, 100.0]])
    per_image = ops.clip_boxes(np.full((2, 1, 4), 90.0, "float32"), [[[50, 60]], [[100, 100]]])
    np.testing.assert_allclose(numpy(per_image)[:, 0, 0], [50.0, 90.0])
    coco = np.array([[10.0, 20.0, 30.0, 5.0]], "float32")  # x, y, w, h
    yxyx = numpy(ops.from_coco(coco))
    np.testing.assert_allclose(yxyx, [[20.0, 10.0, 25.0, 40.0]])
    np.testing.assert_allclose(numpy(ops.to_coco(yxyx)), coco)
    assert numpy(ops.box_area(yxyx))[0] == pytest.approx(150.0)
