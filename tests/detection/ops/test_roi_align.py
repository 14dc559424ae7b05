import keras
import numpy as np
import pytest

from lambda_keras.detection import ops
from tests.backend import compiled, gradients, numpy
from tests.detection.ops import reference


def _boxes(rng, n, size):
    """Boxes inside, across and beyond the edges of a ``size`` image, some tiny."""
    y = rng.uniform(-0.2 * size, 1.1 * size, (n, 2))
    x = rng.uniform(-0.2 * size, 1.1 * size, (n, 2))
    y.sort(axis=1)
    x.sort(axis=1)
    boxes = np.stack([y[:, 0], x[:, 0], y[:, 1], x[:, 1]], 1)
    boxes[0] = [3.0, 4.0, 3.2, 4.1]  # smaller than a cell
    return boxes.astype("float32")


@pytest.mark.parametrize("aligned", [True, False])
@pytest.mark.parametrize("scale", [1.0, 0.25])
def test_matches_torchvision_algorithm(aligned, scale):
    rng = np.random.default_rng(2)
    features = rng.normal(size=(2, 9, 11, 3)).astype("float32")
    boxes = np.stack([_boxes(rng, 5, 11 / scale), _boxes(rng, 5, 11 / scale)])
    got = ops.roi_align(features, boxes, (3, 4), scale, sampling_ratio=2, aligned=aligned)
    assert got.shape == (2, 5, 3, 4, 3)
    for b in range(2):
        for n in range(5):
            expected = reference.roi_align(features[b], boxes[b, n], (3, 4), scale, 2, aligned)
            np.testing.assert_allclose(numpy(got[b, n]), expected, atol=1e-5)


@pytest.mark.parametrize("aligned", [True, False])
def test_adaptive_sampling_matches_torchvision_algorithm(aligned):
    # sampling_ratio=0: ceil(roi / out) samples per bin per axis, here 1 to 5 (boxes of up to
    # 1.3 maps at scale 0.5, out (3, 4)), a different count on each axis; an empty and an
    # inverted box (aligned: no samples, so 0; not aligned: one cell, one sample).
    rng = np.random.default_rng(5)
    features = rng.normal(size=(1, 9, 11, 2)).astype("float32")
    boxes = _boxes(rng, 8, 22)
    boxes[1] = [6.0, 6.0, 6.0, 6.0]
    boxes[2] = [9.0, 9.0, 5.0, 7.0]
    got = numpy(
        ops.roi_align(features, boxes[None], (3, 4), 0.5, 0, aligned=aligned, max_sampling_ratio=5)
    )
    counts = set()
    for n, box in enumerate(boxes):
        expected = reference.roi_align(features[0], box, (3, 4), 0.5, 0, aligned)
        np.testing.assert_allclose(got[0, n], expected, atol=1e-5)
        counts.add(int(np.ceil(max(box[2] - box[0], 0) * 0.5 / 3)))
    assert 0 in counts and len(counts) >= 4, counts  # the boxes cover several counts
    if aligned:
        assert not got[0, 1].any() and not got[0, 2].any()


def test_adaptive_sampling_takes_its_bound():
    # A 14-cell box pooled to 7 takes 2 samples per bin, equal to sampling_ratio=2, whatever
    # the bound above 2; a 28.6 x 28.9-cell box needs 5, and with the bound 2 it takes 2.
    rng = np.random.default_rng(6)
    features = rng.normal(size=(1, 32, 32, 3)).astype("float32")
    small = np.array([[[1.0, 2.0, 15.0, 16.0]]], "float32")
    large = np.array([[[1.3, 0.7, 29.9, 29.6]]], "float32")
    fixed = numpy(ops.roi_align(features, small, 7, sampling_ratio=2))
    for bound in (2, 3, 6):
        adaptive = ops.roi_align(features, small, 7, sampling_ratio=0, max_sampling_ratio=bound)
        np.testing.assert_allclose(numpy(adaptive), fixed, atol=1e-5)
    five = numpy(ops.roi_align(features, large, 7, sampling_ratio=5))
    capped = ops.roi_align(features, large, 7, sampling_ratio=0, max_sampling_ratio=2)
    np.testing.assert_allclose(
        numpy(ops.roi_align(features, large, 7, sampling_ratio=0, max_sampling_ratio=8)),
        five,
        atol=1e-5,
    )
    np.testing.assert_allclose(
        numpy(capped), numpy(ops.roi_align(features, large, 7, sampling_ratio=2)), atol=1e-5
    )
    assert np.abs(numpy(capped) - five).max() > 1e-3


def test_half_pixel_alignment_on_a_ramp():
    # Cell (i, j) holds i. A box over the whole 8x8 image pooled to 8x8 bins samples each bin
    # around the centre of cell i: away from the border the output is the map itself.
    ramp = np.tile(np.arange(8, dtype="float32")[:, None, None], (1, 8, 1))[None]
    out = numpy(ops.roi_align(ramp, [[[0.0, 0.0, 8.0, 8.0]]], 8, 1.0, sampling_ratio=2))
    np.testing.assert_allclose(out[0, 0, 1:-1, :, 0], ramp[0, 1:-1, :, 0], atol=1e-6)
    # At stride 4, image box (8, 0, 12, 32) is map rows 2..3: its centre row is cell 2.
    pooled = numpy(ops.roi_align(ramp, [[[8.0, 0.0, 12.0, 32.0]]], 1, 0.25, sampling_ratio=4))
    assert pooled[0, 0, 0, 0, 0] == pytest.approx(2.0)


def test_multilevel_picks_the_fpn_level_and_equals_single_level():
    rng = np.random.default_rng(3)
    pyramid = {
        f"P{k}": rng.normal(size=(1, 256 >> k, 256 >> k, 2)).astype("float32") for k in (2, 3, 4, 5)
    }
    # sqrt(area) 56 -> level 2, 112 -> 3, 224 -> 4, 448 -> 5 (clipped), 8 -> 2 (clipped).
    sides = [56.0, 112.0, 224.0, 448.0, 8.0]
    boxes = np.array([[[10.0, 10.0, 10.0 + s, 10.0 + s] for s in sides]], "float32")
    levels = numpy(ops.assign_pyramid_levels(boxes, 2, 5))
    assert levels.tolist() == [[2, 3, 4, 5, 2]]
    got = numpy(ops.multilevel_roi_align(pyramid, boxes, 7))
    for n, level in enumerate(levels[0]):
        single = ops.roi_align(pyramid[f"P{level}"], boxes[:, n : n + 1], 7, 2.0**-level)
        np.testing.assert_allclose(got[:, n], numpy(single)[:, 0], atol=1e-6)


def test_gradients_and_compiled():
    features = keras.Variable(np.random.default_rng(4).normal(size=(1, 16, 16, 4)), "float32")
    boxes = np.array([[[1.0, 2.0, 9.0, 12.0], [-3.0, -3.0, 40.0, 40.0]]], "float32")

    def loss():
        return keras.ops.sum(ops.roi_align(features.value, boxes, 7, 0.5) ** 2)

    (grad,) = gradients(loss, [features])
    assert np.isfinite(grad).all() and np.abs(grad).sum() > 0
    pooled = numpy(compiled(lambda f, b: ops.roi_align(f, b, 7, 0.5))(features.value, boxes))
    eager = numpy(ops.roi_align(features.value, boxes, 7, 0.5))
    np.testing.assert_allclose(pooled, eager, rtol=1e-5, atol=1e-5)


def test_bad_arguments_are_named():
    features = np.zeros((1, 4, 4, 1), "float32")
    boxes = np.zeros((1, 1, 4))
    with pytest.raises(ValueError, match="needs `max_sampling_ratio`.*None"):
        ops.roi_align(features, boxes, 2, sampling_ratio=0)
    with pytest.raises(ValueError, match="needs sampling_ratio=0; received sampling_ratio=2"):
        ops.roi_align(features, boxes, 2, sampling_ratio=2, max_sampling_ratio=4)
    with pytest.raises(ValueError, match="or 0 for the adaptive count; received.*-1"):
        ops.roi_align(features, boxes, 2, sampling_ratio=-1)
    with pytest.raises(ValueError, match="sampling_ratio=True"):
        ops.multilevel_roi_align({"P2": features}, boxes, sampling_ratio=True)
    with pytest.raises(ValueError, match="max_sampling_ratio=0"):
        ops.roi_align(features, boxes, 2, sampling_ratio=0, max_sampling_ratio=0)
    with pytest.raises(ValueError, match="output_size"):
        ops.roi_align(features, np.zeros((1, 1, 4)), 0)
    with pytest.raises(ValueError, match="consecutive levels"):
        ops.multilevel_roi_align({"P2": features, "P4": features}, np.zeros((1, 1, 4)))
    with pytest.raises(ValueError, match="same number of channels"):
        ops.multilevel_roi_align(
            {"P2": features, "P3": np.zeros((1, 2, 2, 3), "float32")}, np.zeros((1, 1, 4))
        )
    with pytest.raises(ValueError, match="'P<level>'"):
        ops.multilevel_roi_align({"p2": features}, np.zeros((1, 1, 4)))
