"""The anchor generators: each rule as the ops compute it, passed to the model and saved with
it, and refused when it does not fit the model."""

import keras
import numpy as np
import pytest

from lambda_keras.detection import (
    AnchorGenerator,
    CentredAnchors,
    MaskRCNN,
    TorchvisionAnchors,
    ops,
)
from tests.detection.tiny import tiny_backbone


def test_centred_anchors_are_the_pyramid_anchors_of_the_canvas():
    anchors, valid = CentredAnchors()((128, 64))
    expected = ops.pyramid_anchors((128, 64))
    assert valid is None and set(anchors) == {"P2", "P3", "P4", "P5", "P6"}
    for level, boxes in expected.items():
        np.testing.assert_array_equal(np.asarray(anchors[level]), np.asarray(boxes))


def test_centred_anchors_beyond_an_image_are_not_valid():
    """An image 100 pixels high in a 128 x 64 canvas: at stride 4 its first 25 rows of cells
    (3 anchors each, 16 columns, row-major) are valid, at stride 64 both rows (ceil)."""
    anchors, valid = CentredAnchors()((128, 64), image_sizes=[[100, 64], [128, 64]])
    expected = ops.pyramid_anchors((128, 64))
    for level, boxes in expected.items():
        np.testing.assert_array_equal(np.asarray(anchors[level]), np.asarray(boxes))
    p2 = np.asarray(valid["P2"])
    assert p2.shape == (2, 32 * 16 * 3) and p2[1].all()
    np.testing.assert_array_equal(p2[0], np.arange(32 * 16 * 3) < 25 * 16 * 3)
    assert np.asarray(valid["P6"]).all()


def test_torchvision_anchors_per_image_or_one_set():
    generator = TorchvisionAnchors()
    per_image, valid = generator((128, 192), [[128, 160], [96, 192]])
    expected, expected_valid = ops.torchvision_anchors((128, 192), [[128, 160], [96, 192]])
    for level in expected:
        np.testing.assert_array_equal(np.asarray(per_image[level]), np.asarray(expected[level]))
        np.testing.assert_array_equal(np.asarray(valid[level]), np.asarray(expected_valid[level]))
    whole, none = generator((128, 192))
    assert none is None and tuple(whole["P2"].shape) == (32 * 48 * 3, 4)
    filling, _ = generator((128, 192), [[128, 192]])  # an image that fills the canvas
    for level in whole:
        np.testing.assert_array_equal(np.asarray(whole[level]), np.asarray(filling[level][0]))


def test_a_generator_is_saved_with_the_model(tmp_path):
    generator = CentredAnchors(aspect_ratios=(1.0, 2.0))
    model = MaskRCNN(tiny_backbone(), num_classes=2, fpn_channels=8, anchor_generator=generator)
    assert model.rpn_head.anchors_per_cell == 2  # the RPN predicts one per ratio
    model.build((None, None, None, 3))
    model.save(tmp_path / "m.keras")
    loaded = keras.saving.load_model(tmp_path / "m.keras")
    assert loaded.anchor_generator == generator and loaded.anchor_generator is not generator
    assert MaskRCNN(tiny_backbone(), num_classes=2).anchor_generator == CentredAnchors()


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"anchor_generator": "torchvision"}, TypeError, "must be an AnchorGenerator"),
        (
            {"anchor_generator": CentredAnchors(sizes={3: 32.0, 4: 64.0})},
            ValueError,
            "must give anchors on the FPN's levels",
        ),
    ],
)
def test_a_generator_that_does_not_fit_the_model_is_refused(kwargs, error, message):
    with pytest.raises(error, match=message):
        MaskRCNN(tiny_backbone(), num_classes=2, **kwargs)


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"sizes": {}}, TypeError, "`sizes` must be a dict"),
        ({"sizes": {2: -1.0}}, ValueError, "`sizes` must be a positive number"),
        ({"sizes": {2: "32"}}, ValueError, "`sizes` must be a positive number; received sizes='3"),
        ({"sizes": {2.7: 32.0}}, ValueError, r"levels \(positive integers.*level 2.7 in sizes="),
        ({"sizes": {"P2": 32.0}}, ValueError, "`sizes` must map pyramid levels.*level 'P2'"),
        ({"sizes": {True: 32.0}}, ValueError, "`sizes` must map pyramid levels.*level True"),
        ({"sizes": {0: 32.0}}, ValueError, r"`sizes` must map.*level 0 in sizes=\{0: 32.0\}"),
        ({"aspect_ratios": ()}, ValueError, "`aspect_ratios` must be numbers"),
        ({"aspect_ratios": 5}, TypeError, "`aspect_ratios` must be numbers.*aspect_ratios=5"),
        ({"aspect_ratios": None}, TypeError, "`aspect_ratios` must be numbers.*=None"),
        ({"aspect_ratios": (0.0,)}, ValueError, "`aspect_ratios` must be a positive number"),
    ],
)
def test_generator_arguments(kwargs, error, message):
    with pytest.raises(error, match=message):
        CentredAnchors(**kwargs)


@pytest.mark.parametrize("generator", [CentredAnchors, TorchvisionAnchors])
@pytest.mark.parametrize(
    "canvas, error, message",
    [
        (64, TypeError, r"`canvas` must be the batch's static \(height, width\).*=64 \(int\)"),
        (None, TypeError, "`canvas` must be .*canvas=None"),
        ("64", TypeError, "`canvas` must be .*canvas='64' \\(str\\)"),
        ((64,), ValueError, r"`canvas` must be .*canvas=\(64,\)"),
        ((64, 64, 3), ValueError, r"`canvas` must be .*canvas=\(64, 64, 3\)"),
        ((64, 64.0), ValueError, r"`canvas\[1\]` must be a positive integer; received .*=64.0"),
        ((0, 64), ValueError, r"`canvas\[0\]` must be a positive integer; received canvas\[0\]=0"),
        ((True, 64), ValueError, r"`canvas\[0\]` must be a positive integer.*=True"),
    ],
)
def test_a_canvas_that_is_not_two_positive_ints_is_refused_by_name(
    generator, canvas, error, message
):
    with pytest.raises(error, match=message):
        generator()(canvas)


def test_a_canvas_of_numpy_ints_a_list_or_a_tensorflow_shape_gives_the_same_anchors():
    expected, _ = CentredAnchors()((64, 128))
    canvases = [[64, 128], (np.int64(64), np.int32(128))]
    try:  # TensorFlow's shape where TensorFlow is installed (not in the TensorFlow-free runs)
        import tensorflow as tf

        canvases.append(tf.TensorShape([64, 128]))
    except ImportError:
        pass
    for canvas in canvases:
        anchors, _ = CentredAnchors()(canvas)
        np.testing.assert_array_equal(
            keras.ops.convert_to_numpy(anchors["P2"]), keras.ops.convert_to_numpy(expected["P2"])
        )


def test_levels_of_any_integer_type_are_kept_in_order():
    generator = CentredAnchors(sizes={np.int64(3): 64, 2: np.float32(32.0)}, aspect_ratios=[1])
    assert generator.get_config() == {"sizes": {2: 32.0, 3: 64.0}, "aspect_ratios": (1.0,)}
    assert generator.levels == ("P2", "P3")


def test_the_base_class_says_where_its_anchors_lie_only_in_a_subclass():
    with pytest.raises(NotImplementedError):
        AnchorGenerator()((64, 64))


def test_a_saved_level_that_is_not_digits_is_refused_by_name():
    """JSON keeps the levels as strings: from_config turns digits back into ints and leaves the
    rest to the constructor, which names ``sizes`` (a bare ``int("P2")`` failed before)."""
    assert CentredAnchors.from_config({"sizes": {"2": 32}, "aspect_ratios": [1.0]}).sizes == {2: 32}
    with pytest.raises(ValueError, match=r"`sizes` must map pyramid levels .*the level 'P2'"):
        CentredAnchors.from_config({"sizes": {"P2": 32}, "aspect_ratios": [1.0]})
