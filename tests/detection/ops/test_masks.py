import numpy as np
import pytest

from lambda_keras.detection import ops
from tests.backend import numpy
from tests.detection.ops import reference


def test_paste_matches_grid_sample_definition():
    rng = np.random.default_rng(5)
    masks = rng.uniform(size=(3, 6, 6)).astype("float32")
    boxes = np.array([[2.3, 1.7, 12.9, 9.1], [-4.0, 5.0, 8.0, 30.0], [0.0, 0.0, 20.0, 24.0]])
    got = numpy(ops.paste_masks(masks, boxes.astype("float32"), (20, 24), threshold=None))
    for n in range(3):
        expected = reference.paste(masks[n], boxes[n], 20, 24)
        np.testing.assert_allclose(got[n], expected, atol=1e-5)


def test_full_mask_pastes_its_box():
    masks = np.ones((1, 28, 28), "float32")
    pasted = ops.paste_masks(masks, np.array([[4.0, 6.0, 14.0, 20.0]], "float32"), (24, 24))
    expected = np.zeros((24, 24), bool)
    expected[4:14, 6:20] = True
    np.testing.assert_array_equal(numpy(pasted)[0], expected)


def test_empty_box_pastes_nothing():
    pasted = ops.paste_masks(np.ones((1, 4, 4)), np.array([[5.0, 5.0, 5.0, 9.0]]), (10, 10))
    assert not numpy(pasted).any()


def test_crop_picks_each_boxs_mask_and_round_trips():
    image_masks = np.zeros((1, 2, 32, 32), "float32")
    image_masks[0, 0, 4:20, 8:24] = 1.0
    image_masks[0, 1, 10:30, 2:12] = 1.0
    boxes = np.array([[[4.0, 8.0, 20.0, 24.0], [10.0, 2.0, 30.0, 12.0], [4.0, 8.0, 20.0, 24.0]]])
    crops = numpy(ops.crop_masks(image_masks, boxes.astype("float32"), [[0, 1, 1]], mask_size=14))
    assert crops.shape == (1, 3, 14, 14)
    for n in (0, 1):  # the box is the mask's rectangle: 1 inside, blurred by half a pixel
        np.testing.assert_allclose(crops[0, n, 1:-1, 1:-1], 1.0, rtol=1e-6)  # float32 sums
        assert crops[0, n].min() > 0.5
    assert crops[0, 2].mean() < 0.5  # box 2 crops mask 1, which only partly covers it
    pasted = numpy(ops.paste_masks(crops[0, :2], boxes[0, :2].astype("float32"), (32, 32)))
    np.testing.assert_array_equal(pasted, image_masks[0] > 0.5)


def test_bad_image_shape():
    with pytest.raises(ValueError, match=r"image_shape\[0\]"):
        ops.paste_masks(np.ones((1, 4, 4)), np.zeros((1, 4)), (0, 10))
