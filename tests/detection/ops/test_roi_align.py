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
            expected = _reference_rect(features[b], boxes[b, n], (3, 4), scale, 2, aligned)
            np.testing.assert_allclose(numpy(got[b, n]), expected, atol=1e-5)


def _reference_rect(feature, box, out, scale, ratio, aligned):
    """The square reference run on a stretched copy: bins of an out_h x out_w grid."""
    out_h, out_w = out
    rows = reference.roi_align(feature, box, max(out), scale, ratio, aligned)
    if out_h == out_w:
        return rows
    # Recompute directly for a rectangular grid.
    offset = 0.5 if aligned else 0.0
    y1, x1, y2, x2 = (c * scale - offset for c in box)
    roi_h, roi_w = (y2 - y1, x2 - x1) if aligned else (max(y2 - y1, 1.0), max(x2 - x1, 1.0))
    result = np.zeros((out_h, out_w, feature.shape[2]))
    for ph in range(out_h):
        for pw in range(out_w):
            total = 0.0
            for iy in range(ratio):
                y = y1 + (ph + (iy + 0.5) / ratio) * roi_h / out_h
                for ix in range(ratio):
                    x = x1 + (pw + (ix + 0.5) / ratio) * roi_w / out_w
                    total = total + reference.bilinear(feature, y, x)
            result[ph, pw] = total / ratio**2
    return result


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
    with pytest.raises(ValueError, match="sampling_ratio"):
        ops.roi_align(features, np.zeros((1, 1, 4)), 2, sampling_ratio=0)
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
