import numpy as np
import pytest

from lambda_keras.detection import ops
from tests.backend import numpy


def test_counts_centres_areas_and_ratios():
    anchors = ops.pyramid_anchors((128, 64))
    assert list(anchors) == ["P2", "P3", "P4", "P5", "P6"]
    for level, size in ops.DEFAULT_SIZES.items():
        boxes = numpy(anchors[f"P{level}"])
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
    np.testing.assert_allclose(numpy(anchors["P3"])[0], [-8.0, -8.0, 16.0, 16.0])
    with pytest.raises(ValueError, match=r"multiple of the largest stride 64.*\(96, 64\)"):
        ops.pyramid_anchors((96, 64))
    with pytest.raises(ValueError, match="aspect_ratios"):
        ops.pyramid_anchors((64, 64), aspect_ratios=(0.0,))


def test_torchvision_anchors_per_image_of_a_batch():
    # Image 0 padded to 800 x 1088 (P6: 13 x 17 cells of stride 61 x 64), image 1 fills the
    # 832 x 1088 batch (P6: 13 x 17 cells of stride 64).
    anchors, valid = ops.torchvision_anchors((832, 1088), [[800, 1088], [832, 1088]])
    assert anchors["P2"].shape == (2, 208 * 272 * 3, 4) and valid["P6"].shape == (2, 13 * 17 * 3)
    assert numpy(valid["P2"]).sum(1).tolist() == [200 * 272 * 3, 208 * 272 * 3]
    assert numpy(valid["P6"]).all()
    # Cell (1, 1) of P6, ratio 1 (the middle anchor): centred on (61, 64) and (64, 64).
    cell = (1 * 17 + 1) * 3 + 1
    np.testing.assert_array_equal(
        numpy(anchors["P6"])[:, cell], [[-195, -192, 317, 320], [-192, -192, 320, 320]]
    )
    # torchvision's rounded cell anchors: ratio 0.5 is 22.6 x 45.3 pixels -> 22 x 46.
    np.testing.assert_array_equal(
        numpy(anchors["P2"])[0, :3], [[-11, -23, 11, 23], [-16, -16, 16, 16], [-23, -11, 23, 11]]
    )
