"""FeaturePyramid: P2-P6 from P2-P5, zeros beyond each image's part, through the harness."""

import numpy as np
import pytest

from lambda_keras.detection.fpn import FeaturePyramid
from tests.backend import numpy
from tests.layer_harness import run_layer_test

RNG = np.random.default_rng(0)


def features(batch=2, side=32, channels=(4, 6, 8, 10)):
    """Backbone maps of a ``side`` x ``side`` batch, P2 (stride 4) to P5 (stride 32)."""
    return {
        f"P{level}": RNG.normal(size=(batch, side // 2**level, side // 2**level, c)).astype(
            "float32"
        )
        for level, c in zip(range(2, 6), channels, strict=True)
    }


@pytest.mark.parametrize("batch_norm", [False, True])
def test_the_pyramid_has_every_level_at_its_stride(batch_norm, tmp_path):
    layer = FeaturePyramid(8, batch_norm=batch_norm, name=f"fpn_{batch_norm}")
    outputs = run_layer_test(layer, features(side=64), tmp_path)
    assert {k: tuple(v.shape) for k, v in outputs.items()} == {
        "P2": (2, 16, 16, 8),
        "P3": (2, 8, 8, 8),
        "P4": (2, 4, 4, 8),
        "P5": (2, 2, 2, 8),
        "P6": (2, 1, 1, 8),
    }


def test_each_image_s_maps_are_zero_beyond_its_part(tmp_path):
    sizes = np.array([[64, 64], [32, 64]], "int32")  # image 1 fills the top half
    outputs = run_layer_test(
        FeaturePyramid(8), features(side=64), tmp_path, call_kwargs={"valid_sizes": sizes}
    )
    p2 = numpy(outputs["P2"])
    assert np.all(p2[1, 8:] == 0) and np.any(p2[1, :8] != 0) and np.any(p2[0, 8:] != 0)


@pytest.mark.parametrize("shape", [(2, 3, 5, 4), (1, 6, 2, 3), (1, 1, 1, 2)])
def test_the_top_down_sum_is_the_nearest_upsampled_map_added(shape):
    """Landscape, upright and one-cell maps: the broadcast sum equals adding the map repeated
    twice along each axis (torchvision's nearest upsampling)."""
    import keras

    from lambda_keras.detection.fpn import _add_upsampled

    coarse = RNG.normal(size=shape).astype("float32")
    fine = RNG.normal(size=(shape[0], 2 * shape[1], 2 * shape[2], shape[3])).astype("float32")
    expected = fine + coarse.repeat(2, 1).repeat(2, 2)
    np.testing.assert_array_equal(numpy(_add_upsampled(fine, coarse)), expected)
    if keras.backend.backend() == "tensorflow":  # sizes known only when the graph runs
        import tensorflow as tf

        spec = tf.TensorSpec((None, None, None, shape[3]))
        traced = tf.function(_add_upsampled, input_signature=[spec, spec])
        np.testing.assert_array_equal(traced(fine, coarse).numpy(), expected)
