"""select_detections: softmax scores per class, the threshold, per-class NMS, a fixed count."""

import keras
import numpy as np

from lambda_keras.detection.detections import select_detections
from tests.backend import numpy

ROIS = np.array([[[0, 0, 10, 10], [0, 0, 10, 11], [20, 20, 30, 30]]], "float32")


def detect(logits, rois_valid=(True, True, True), **kwargs):
    tensor = keras.ops.convert_to_tensor  # the model passes tensors (a NumPy `&` a torch one fails)
    out = select_detections(
        tensor(np.array([logits], "float32")),
        tensor(np.zeros((1, 3, 2, 4), "float32")),  # two classes, boxes as the RoIs
        tensor(ROIS),
        tensor(np.array([rois_valid])),
        (32, 32),
        max_detections=4,
        **kwargs,
    )
    return {k: numpy(v)[0] for k, v in out.items()}


def test_the_best_box_per_class_survives_and_the_rest_is_padding():
    # RoI 0 and 1 overlap (IoU 10/11): class 0 keeps the better; RoI 2 is class 1.
    found = detect([[0, 6, 0], [0, 5, 0], [0, 0, 4]])
    np.testing.assert_array_equal(found["valid"], [True, True, False, False])
    np.testing.assert_array_equal(found["classes"], [0, 1, -1, -1])
    np.testing.assert_allclose(found["boxes"][:2], ROIS[0, [0, 2]])
    assert found["scores"][0] > found["scores"][1] > 0.05


def test_overlapping_boxes_of_different_classes_both_stay():
    found = detect([[0, 6, 0], [0, 0, 5], [9, 0, 0]])
    np.testing.assert_array_equal(found["classes"][:2], [0, 1])
    np.testing.assert_array_equal(found["valid"], [True, True, False, False])


def test_invalid_rois_and_low_scores_give_nothing():
    found = detect([[0, 6, 0], [0, 6, 0], [9, 0, 0]], rois_valid=(False, False, True))
    assert not found["valid"].any() and (found["classes"] == -1).all()
