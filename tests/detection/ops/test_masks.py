import warnings

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


def test_a_crop_stays_in_the_masks_range():
    # Bilinear weights summing to 1 in float: unclipped, PyTorch's sparse product gave up to
    # 1.0000002 here for a mask of ones, which check_targets refuses as a training target.
    rng = np.random.default_rng(0)
    corners = rng.uniform(0, [40, 60], (1, 500, 2))
    boxes = np.concatenate([corners, corners + rng.uniform(1, [30, 40], (1, 500, 2))], -1)
    indices = rng.integers(0, 8, (1, 500))
    for masks in (np.ones((1, 8, 64, 96), "float32"), rng.uniform(size=(1, 8, 64, 96)) > 0.3):
        crops = numpy(ops.crop_masks(masks.astype("float32"), boxes.astype("float32"), indices))
        assert crops.max() == 1.0 and crops.min() >= 0.0
    assert (crops > 0).mean() > 0.5  # not clipped to nothing: most cells see the mask
    # Only rounding is moved: a 0/255 mask (a PNG's) still crops to 255, and NaN stays NaN.
    bad = numpy(ops.crop_masks(masks.astype("float32") * 255, boxes.astype("float32"), indices))
    np.testing.assert_allclose(bad, crops * 255, rtol=1e-5, atol=1e-3)
    nan = np.where(masks, np.float32("nan"), np.float32(0))
    assert np.isnan(numpy(ops.crop_masks(nan, boxes.astype("float32"), indices))).any()


def test_bad_image_shape():
    with pytest.raises(ValueError, match=r"image_shape\[0\]"):
        ops.paste_masks(np.ones((1, 4, 4)), np.zeros((1, 4)), (0, 10))


def _boxes_of_every_kind(rng, count, height, width):
    """Boxes inside the image, across its edges, beyond it, a line (no height) and a speck."""
    y = np.sort(rng.uniform(-0.3 * height, 1.2 * height, (count, 2)), axis=1)
    x = np.sort(rng.uniform(-0.3 * width, 1.2 * width, (count, 2)), axis=1)
    boxes = np.stack([y[:, 0], x[:, 0], y[:, 1], x[:, 1]], 1)
    boxes[0] = [5.0, 6.0, 5.0, 30.0]  # no height
    boxes[1] = [10.2, 11.7, 10.6, 12.1]  # under a pixel
    boxes[2] = [-50.0, -40.0, -10.0, -5.0]  # above and left of the image
    boxes[3] = [0.0, 0.0, float(height), float(width)]  # the whole image
    return boxes.astype("float32")


@pytest.mark.parametrize(
    "on_host, on_device",
    [
        (ops.paste_masks_on_host, ops.paste_masks),
        (
            ops.paste_masks_torchvision_on_host,
            lambda masks, boxes, shape: ops.paste_masks_torchvision(masks, boxes, shape) >= 0.5,
        ),
    ],
    ids=["paste_masks", "paste_masks_torchvision"],
)
@pytest.mark.parametrize("shape", [(40, 48), (48, 40), (44, 44)], ids=str)
def test_the_host_paste_is_the_ops_paste_box_by_box(on_host, on_device, shape):
    rng = np.random.default_rng(shape[0] * shape[1])
    boxes = _boxes_of_every_kind(rng, 24, *shape)
    masks = rng.uniform(size=(24, 14, 14)).astype("float32")
    masks[3] = 1.0  # the whole image: every pixel
    keep = rng.uniform(size=24) < 0.75
    keep[:4] = True
    expected = numpy(on_device(masks, boxes, shape))
    got = on_host(masks, boxes, shape, keep)
    assert got.dtype == bool and got.shape == (24, *shape)
    np.testing.assert_array_equal(got[keep], expected[keep])
    assert not got[~keep].any()  # the rows left out stay empty
    assert got[3, 1:-1, 1:-1].all() and not got[2].any()  # the whole image; none of it
    np.testing.assert_array_equal(on_host(masks, boxes, shape), expected)  # keep=None: all


def test_the_host_paste_at_another_threshold():
    masks = np.random.default_rng(3).uniform(size=(1, 4, 4)).astype("float32")
    boxes = np.array([[2.3, 3.1, 17.6, 15.2]], "float32")
    expected = numpy(ops.paste_masks(masks, boxes, (20, 20), threshold=0.3))
    got = ops.paste_masks_on_host(masks, boxes, (20, 20), threshold=0.3)
    np.testing.assert_array_equal(got, expected)
    higher = ops.paste_masks_on_host(masks, boxes, (20, 20), threshold=0.7)
    assert 0 < higher.sum() < got.sum() and not (higher & ~got).any()


@pytest.mark.parametrize(
    "paste",
    [ops.paste_masks_on_host, ops.paste_masks_torchvision_on_host],
    ids=lambda paste: paste.__name__,
)
def test_the_host_paste_of_a_box_it_cannot_place_is_empty(paste):
    boxes = np.array(
        [
            [np.nan, 0.0, 10.0, 10.0],
            [0.0, 2.0, 10.0, np.inf],
            [-3e8, -3e8, -3e8 + 1.0, -3e8 + 1.0],  # pixels past int32 after torchvision's scale
            [-3e9, 2.0, -3e9 + 0.5, 3.0],  # past int32 itself
            [2.0, 2.0, 12.0, 14.0],  # a box it places
        ],
        "float32",
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # NumPy's casts of such values warn no one
        pasted = paste(np.ones((5, 7, 7), "float32"), boxes, (16, 16))
    assert not pasted[:4].any() and pasted[4, 4:10, 4:12].all()
