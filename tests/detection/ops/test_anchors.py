import numpy as np
import pytest

from lambda_keras.detection import ops


def test_counts_centres_areas_and_ratios():
    anchors = ops.pyramid_anchors((128, 64))
    assert list(anchors) == ["P2", "P3", "P4", "P5", "P6"]
    for level, size in ops.DEFAULT_SIZES.items():
        boxes = anchors[f"P{level}"].numpy()
        stride = 2**level
        assert boxes.shape == ((128 // stride) * (64 // stride) * 3, 4)
        heights, widths = boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]
        np.testing.assert_allclose(heights * widths, size**2, rtol=1e-5)
        np.testing.assert_allclose((heights / widths)[:3], [0.5, 1.0, 2.0], rtol=1e-5)
        centres = (boxes[:, :2] + boxes[:, 2:]) / 2
        # Row-major cells, ratios innermost: anchor 3 is the second cell of the first row.
        np.testing.assert_allclose(centres[0], [stride / 2, stride / 2])
        if 64 // stride > 1:
            np.testing.assert_allclose(centres[3], [stride / 2, 1.5 * stride])


def test_custom_sizes_and_bad_arguments():
    anchors = ops.pyramid_anchors((32, 32), sizes={3: 24.0}, aspect_ratios=(1.0,))
    np.testing.assert_allclose(anchors["P3"].numpy()[0], [-8.0, -8.0, 16.0, 16.0])
    with pytest.raises(ValueError, match=r"multiple of the largest stride 64.*\(96, 64\)"):
        ops.pyramid_anchors((96, 64))
    with pytest.raises(ValueError, match="aspect_ratios"):
        ops.pyramid_anchors((64, 64), aspect_ratios=(0.0,))
