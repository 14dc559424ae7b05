import numpy as np
import pytest
import tensorflow as tf

from lambda_keras.detection import ops
from tests.detection.ops import reference
from tests.detection.ops.test_boxes import _random_boxes


@pytest.mark.parametrize("threshold", [0.3, 0.5, 0.7])
def test_matches_greedy_nms(threshold):
    rng = np.random.default_rng(int(threshold * 10))
    boxes = _random_boxes(rng, 60, size=50.0)
    scores = rng.permutation(60).astype("float32") / 60  # distinct scores: one greedy order
    indices, valid = ops.nms(boxes, scores, max_output_size=40, iou_threshold=threshold)
    kept = indices.numpy()[valid.numpy()].tolist()
    assert kept == reference.greedy_nms(boxes, scores, threshold, 40)
    assert (indices.numpy()[~valid.numpy()] == 0).all()


def test_batched_padding_score_threshold_and_xla():
    boxes = np.array(
        [[[0, 0, 10, 10], [0, 0, 10, 9], [20, 20, 30, 30]], [[0, 0, 1, 1]] * 3], "float32"
    )
    scores = np.array([[0.9, 0.8, 0.7], [0.1, 0.05, 0.01]], "float32")

    @tf.function(jit_compile=True)
    def run(b, s):
        return ops.nms(b, s, max_output_size=4, iou_threshold=0.5, score_threshold=0.2)

    indices, valid = run(boxes, scores)
    assert indices.shape == (2, 4)
    assert indices.numpy()[0][valid.numpy()[0]].tolist() == [0, 2]
    assert not valid.numpy()[1].any()  # every score under the threshold: nothing, no crash


def test_batched_nms_keeps_overlapping_boxes_of_other_classes():
    boxes = np.array([[0, 0, 10, 10], [0, 0, 10, 10], [0, 0, 10, 10]], "float32")
    scores = np.array([0.9, 0.8, 0.7], "float32")
    indices, valid = ops.batched_nms(boxes, scores, [1, 2, 1], max_output_size=3)
    assert indices.numpy()[valid.numpy()].tolist() == [0, 1]


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="max_output_size"):
        ops.nms(np.zeros((2, 4)), np.zeros(2), max_output_size=0)
    with pytest.raises(ValueError, match="iou_threshold"):
        ops.nms(np.zeros((2, 4)), np.zeros(2), max_output_size=2, iou_threshold=1.5)
