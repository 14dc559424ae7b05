"""The RPN, box and mask heads: their outputs' layout, through the harness."""

import numpy as np

from lambda_keras.detection.heads import BoxHead, MaskHead, RPNHead
from tests.layer_harness import run_layer_test

RNG = np.random.default_rng(0)


def test_the_rpn_head_gives_every_anchor_of_every_level_in_order(tmp_path):
    maps = {"P2": RNG.normal(size=(2, 8, 8, 6)), "P3": RNG.normal(size=(2, 4, 4, 6))}
    maps = {k: v.astype("float32") for k, v in maps.items()}
    head = RPNHead(anchors_per_cell=3, channels=6, num_convs=2)
    objectness, deltas = run_layer_test(head, maps, tmp_path)
    anchors = 3 * (8 * 8 + 4 * 4)
    assert tuple(objectness.shape) == (2, anchors) and tuple(deltas.shape) == (2, anchors, 4)


def test_the_box_head_gives_class_logits_and_per_class_deltas(tmp_path):
    rois = RNG.normal(size=(2, 5, 7, 7, 6)).astype("float32")  # [b, R, 7, 7, c]
    head = BoxHead(3, units=16, num_convs=1, conv_channels=8, batch_norm=True)
    logits, deltas = run_layer_test(head, rois, tmp_path)
    assert tuple(logits.shape) == (2, 5, 4)  # background + 3 classes
    assert tuple(deltas.shape) == (2, 5, 3, 4)


def test_the_mask_head_doubles_the_roi_side_with_a_map_per_class(tmp_path):
    rois = RNG.normal(size=(2, 5, 14, 14, 6)).astype("float32")
    head = MaskHead(3, channels=8, num_convs=1, batch_norm=True)
    masks = run_layer_test(head, rois, tmp_path)
    assert tuple(masks.shape) == (2, 5, 28, 28, 3)
