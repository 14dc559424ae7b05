"""The input transforms: the letterbox rule (training, evaluation and serving share it) and
torchvision's transform as a model setting."""

import re

import keras
import numpy as np
import pytest

from lambda_keras.detection import LetterboxTransform, MaskRCNN, TorchvisionTransform
from lambda_keras.detection.transform_graph import letterbox_size, resize
from tests.backend import numpy
from tests.detection.tiny import tiny_backbone, tiny_valid_backbone


@pytest.mark.parametrize(
    "shape, scale, size",
    [((480, 640), 0.2, (96, 128)), ((640, 480), 0.2, (128, 96)), ((1, 1000), 0.128, (1, 128))],
)
def test_the_letterbox_puts_the_longer_side_at_the_image_size(shape, scale, size):
    got_scale, got_size = letterbox_size(np.array(shape), 128)
    assert float(got_scale) == pytest.approx(scale) and tuple(got_size.numpy()) == size


def test_the_letterbox_transform_pads_a_square_and_maps_back():
    transform = LetterboxTransform(128)
    resized, size = resize(transform, np.zeros((480, 640, 3), "uint8"))
    assert resized.shape == (96, 128, 3) and tuple(size.numpy()) == (96, 128)
    assert transform.resized_size(480, 640) == (96, 128)
    assert transform.canvases(size) == ([(128, 128)], None)
    boxes, masks = transform.to_photo(
        np.array([[10.0, 20.0, 50.0, 200.0]], "float32"),
        np.ones((1, 28, 28), "float32"),
        size,
        np.array([480, 640]),
    )
    np.testing.assert_allclose(numpy(boxes), [[50, 100, 250, 640]])  # / 0.2, clipped
    assert numpy(masks).shape == (1, 480, 640) and numpy(masks).dtype == bool
    with pytest.raises(ValueError, match="`image_size` must be a multiple of 64"):
        LetterboxTransform(100)


def test_the_torchvision_transform_is_saved_with_the_model(tmp_path):
    transform = TorchvisionTransform(min_size=64, max_size=128)
    model = MaskRCNN(tiny_valid_backbone(), num_classes=2, transform=transform)
    model.build((None, None, None, 3))
    assert model.input_transform() is transform
    assert isinstance(model.input_transform(128), LetterboxTransform)  # a size asks for it
    model.save(tmp_path / "m.keras")
    loaded = keras.saving.load_model(tmp_path / "m.keras")
    assert loaded.transform == transform and loaded.transform.get_config()["max_size"] == 128


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"min_size": 0}, ValueError, "`min_size` must be a positive integer"),
        ({"min_size": 800, "max_size": 600}, ValueError, "`max_size` must be at least"),
    ],
)
def test_torchvision_transform_arguments(kwargs, error, message):
    with pytest.raises(error, match=message):
        TorchvisionTransform(**kwargs)


def test_a_padding_transform_needs_a_backbone_that_zeroes_beyond_each_image():
    with pytest.raises(ValueError, match="needs a backbone that takes"):
        MaskRCNN(tiny_backbone(), num_classes=2, transform=TorchvisionTransform())
    with pytest.raises(TypeError, match="`transform` must be an InputTransform .* received str"):
        MaskRCNN(tiny_backbone(), num_classes=2, transform="letterbox")


def test_the_letterbox_is_the_default_transform_and_is_saved_with_the_model(tmp_path):
    """Always an object: the default letterbox is sized where the model is served; one given a
    size serves at that size, after a .keras round trip too."""
    model = MaskRCNN(tiny_backbone(), num_classes=2)
    assert model.transform == LetterboxTransform()
    with pytest.raises(ValueError, match="`image_size` is needed to serve this MaskRCNN"):
        model.input_transform()
    assert model.input_transform(128) == LetterboxTransform(128)
    sized = MaskRCNN(tiny_backbone(), num_classes=2, transform=LetterboxTransform(128))
    sized.build((None, None, None, 3))
    sized.save(tmp_path / "m.keras")
    loaded = keras.saving.load_model(tmp_path / "m.keras")
    assert loaded.transform == LetterboxTransform(128)
    assert loaded.input_transform() == LetterboxTransform(128)
    assert loaded.input_transform(64) == LetterboxTransform(64)  # a size asked for wins
    with pytest.raises(ValueError, match="call `at_size\\(image_size\\)` first"):
        LetterboxTransform().resized_size(480, 640)


@pytest.mark.parametrize("shape", [(480, 640), (640, 480), (97, 97), (1, 1000), (1, 2000)])
@pytest.mark.parametrize(
    "transform", [LetterboxTransform(128), TorchvisionTransform()], ids=["letterbox", "tv"]
)
def test_each_transform_resizes_in_a_graph_as_its_own_rule_says(transform, shape):
    """The transform owns both rules: ``resized_size`` (NumPy, Python) and ``graph_resize``
    (TensorFlow, sizes known at run time) give the same size on landscape, upright and square
    photos, and on one so thin that a side floors to 0 (1 pixel in both);
    ``transform_graph.resize`` asks the transform."""
    resized, size = resize(transform, np.zeros((*shape, 3), "uint8"))
    assert tuple(size.numpy()) == transform.resized_size(*shape) == resized.shape[:2]
    if shape != (97, 97):  # LiteRT's integer sizes: torchvision's float64 rounding aside
        resized, size = resize(transform, np.zeros((*shape, 3), "uint8"), float64=False)
        assert tuple(size.numpy()) == transform.resized_size(*shape) == resized.shape[:2]


def test_resize_refuses_what_is_not_a_transform():
    with pytest.raises(TypeError, match="`transform` must be an input transform"):
        resize(object(), np.zeros((4, 4, 3), "uint8"))


@pytest.mark.parametrize(
    "size, compiled, smallest",
    [
        ((800, 1199), (832, 1216), (832, 1216)),  # landscape 3:2
        ((1199, 800), (1216, 832), (1216, 832)),  # upright 3:2
        ((800, 800), (832, 832), (832, 832)),  # square
        ((800, 1066), (832, 1088), (832, 1088)),  # landscape 4:3
        ((832, 1280), (832, 1344), (832, 1280)),  # already multiples of 64
        ((600, 1333), (832, 1344), (640, 1344)),  # longer than 16:9: the longer side capped
    ],
)
def test_the_canvas_is_the_smallest_of_a_few_or_the_smallest_that_holds_the_image(
    size, compiled, smallest
):
    transform = TorchvisionTransform()
    assert transform.long_sides() == (832, 1088, 1216, 1344)
    assert transform.canvas(size) == transform.compiled_canvas(size) == compiled
    assert transform.canvas(size, smallest=True) == smallest
    canvases, _ = transform.canvases(size)  # the serving graph's: two, whatever the photo
    assert canvases == [(832, 1344), (1344, 832)]
    letterbox = LetterboxTransform(128)  # the image fills its square: always the square
    assert letterbox.canvas((96, 128), smallest=True) == letterbox.canvas((96, 128)) == (128, 128)


@pytest.mark.parametrize(
    "shape, size", [((1, 2000), (1, 1333)), ((3, 6000), (1, 1333)), ((2000, 1), (1333, 1))]
)
def test_torchvision_s_rule_keeps_a_side_of_at_least_one_pixel(shape, size):
    """A photo more than 1333 times longer than it is short: torchvision's floor gives a side
    of 0 (its ``GeneralizedRCNNTransform`` refuses to resize to it); here 1 pixel."""
    assert TorchvisionTransform().resized_size(*shape) == size


@pytest.mark.parametrize(
    "transform, shape, size",
    [
        (TorchvisionTransform(), (2, 2000), (1, 1333)),  # torchvision's own sizes, checked
        (TorchvisionTransform(), (480, 640), (800, 1066)),
        (TorchvisionTransform(), (97, 120), (799, 989)),  # its float64 rounding
        (LetterboxTransform(128), (1, 5000), (1, 128)),  # rounds to 0: 1
        (LetterboxTransform(128), (5000, 1), (128, 1)),
    ],
)
def test_other_photo_sizes_keep_their_resized_sizes(transform, shape, size):
    assert transform.resized_size(*shape) == size


@pytest.mark.parametrize(
    "transform", [LetterboxTransform(128), TorchvisionTransform()], ids=["letterbox", "tv"]
)
@pytest.mark.parametrize(
    "shape, name, value",
    [
        ((0, 300), "height", "0"),
        ((300, 0), "width", "0"),
        ((-5, 300), "height", "-5"),
        ((480.0, 640), "height", "480.0"),
        ((480, "640"), "width", "'640'"),
        ((True, 640), "height", "True"),
    ],
)
def test_resized_size_refuses_a_side_that_is_not_a_positive_integer(transform, shape, name, value):
    message = f"`{name}` must be a positive integer; received {name}={value}."
    with pytest.raises(ValueError, match=re.escape(message)):
        transform.resized_size(*shape)


def test_resized_size_takes_numpy_integers():
    sides = np.array([480, 640], np.int64)
    assert TorchvisionTransform().resized_size(*sides) == (800, 1066)
    assert LetterboxTransform(128).resized_size(*sides) == (96, 128)
