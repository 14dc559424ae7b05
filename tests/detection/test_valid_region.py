"""ZeroOutside / zero_outside: a map is zero beyond each image's part of the batch."""

import numpy as np

from lambda_keras.detection.valid_region import ZeroOutside
from tests.backend import numpy
from tests.layer_harness import run_layer_test


def test_a_map_is_zero_beyond_each_image_at_its_stride(tmp_path):
    x = np.ones((2, 4, 6, 3), "float32")  # stride 8: a 32 x 48 batch
    sizes = np.array([[32, 48], [17, 20]], "int32")
    layer = ZeroOutside(stride=8)
    out = numpy(run_layer_test(layer, [x, sizes], tmp_path))
    np.testing.assert_array_equal(out[0], 1.0)
    # 17 x 20 pixels reach into 3 rows and 3 columns of cells (ceil(17 / 8), ceil(20 / 8)).
    np.testing.assert_array_equal(out[1, :3, :3], 1.0)
    assert np.all(out[1, 3:] == 0) and np.all(out[1, :, 3:] == 0)
