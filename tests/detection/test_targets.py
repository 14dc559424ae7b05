import keras
import numpy as np

from lambda_keras.detection import ops, targets
from tests.backend import numpy


def test_rpn_targets_labels_sampling_and_deltas():
    anchors = ops.pyramid_anchors((64, 64), sizes={3: 16.0}, aspect_ratios=(1.0,))["P3"]
    gt = np.array([[[4.0, 4.0, 20.0, 20.0], [0, 0, 0, 0]]], "float32")  # one box + padding
    labels, weights, deltas = targets.rpn_targets(
        anchors, gt, np.array([[1, -1]]), batch_size_per_image=8
    )
    labels, weights = numpy(labels)[0], numpy(weights)[0]
    assert labels[9] == 1.0  # the anchor of cell (1, 1), centred at (12, 12), is the box
    np.testing.assert_allclose(numpy(deltas)[0, 9], 0.0, atol=1e-6)
    assert labels.sum() == 1  # no other anchor reaches IoU 0.7
    assert weights.sum() == 8 and weights[9] == 1.0  # 1 positive + 7 sampled negatives


def test_rpn_targets_without_objects_are_all_negative():
    anchors = ops.pyramid_anchors((64, 64), sizes={3: 16.0})["P3"]
    labels, weights, deltas = targets.rpn_targets(
        anchors, np.zeros((1, 3, 4), "float32"), -np.ones((1, 3), "int32")
    )
    assert numpy(labels).sum() == 0 and numpy(weights).sum() == anchors.shape[0]
    assert np.isfinite(numpy(deltas)).all()


def test_sample_rois_foreground_first_with_ground_truth_added():
    keras.utils.set_random_seed(0)
    proposals = np.array([[[8.0, 8.0, 24.0, 24.0], [40, 40, 60, 60], [0, 0, 4, 4]]], "float32")
    gt = np.array([[[8.0, 8.0, 24.0, 25.0], [0, 0, 0, 0]]], "float32")
    sampled = targets.sample_rois(
        proposals,
        np.array([[True, True, False]]),
        gt,
        np.array([[2, -1]]),
        batch_size_per_image=8,
        positive_fraction=0.25,
    )
    assert sampled.num_foreground == 2
    classes, valid = numpy(sampled.classes)[0], numpy(sampled.valid)[0]
    # Foreground: the first proposal and the ground-truth box itself (label 2 -> class 3).
    assert classes[:2].tolist() == [3, 3]
    # Background: the second proposal only (the third is not valid), then padding.
    assert valid.tolist() == [True, True, True, False, False, False, False, False]
    assert classes[2] == 0
    np.testing.assert_allclose(numpy(sampled.deltas)[0, 2:], 0.0)


def test_crop_instance_masks_maps_roi_into_the_instance_frame():
    # A 16x16 instance mask (left half on) in box (10, 20, 42, 52): 2 image pixels per cell.
    mask = np.zeros((1, 1, 16, 16), "float32")
    mask[0, 0, :, :8] = 1.0
    boxes = np.array([[[10.0, 20.0, 42.0, 52.0]]], "float32")
    rois = np.array([[[10.0, 20.0, 42.0, 36.0], [10.0, 36.0, 42.0, 52.0]]], "float32")
    crops = numpy(targets.crop_instance_masks(mask, boxes, rois, np.array([[0, 0]]), 8))
    np.testing.assert_allclose(crops[0, 0, :, :-1], 1.0)  # the RoI over the left half
    np.testing.assert_allclose(crops[0, 1, :, 1:], 0.0)  # the RoI over the right half
