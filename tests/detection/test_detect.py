"""detect: one photo of any shape through the model's transform, the detections back in the
photo's pixels, and a bad photo named before anything runs."""

import numpy as np
import pytest

from lambda_keras.detection import detect
from tests.detection.tiny import tiny_detector


@pytest.fixture(scope="module")
def detector():
    return tiny_detector(max_detections=5, score_threshold=0.0)


@pytest.mark.parametrize("shape", [(48, 80), (80, 48), (64, 64)])  # landscape, upright, square
def test_the_detections_are_in_the_photo_s_pixels(detector, shape):
    photo = np.random.default_rng(0).integers(0, 256, (*shape, 3), dtype="uint8")
    found = detect(detector, photo, image_size=64)
    count = int(found["num_detections"])
    assert found["boxes"].shape == (5, 4) and found["masks"].shape == (5, *shape)
    assert 0 <= count <= 5 and (found["classes"][count:] == -1).all()
    boxes = found["boxes"][:count]
    assert (boxes >= 0).all() and (boxes[:, [0, 2]] <= shape[0]).all()
    assert (boxes[:, [1, 3]] <= shape[1]).all()
    assert set(np.unique(found["masks"])) <= {0, 1}


@pytest.mark.parametrize(
    "photo, message",
    [
        (np.zeros((32, 32), "uint8"), "height, width, 3"),
        (np.zeros((32, 32, 4), "uint8"), "height, width, 3"),
    ],
)
def test_a_bad_photo_is_named(detector, photo, message):
    with pytest.raises(ValueError, match=message):
        detect(detector, photo, image_size=64)


def test_a_model_that_is_not_a_detector_is_refused():
    with pytest.raises(TypeError, match="`model` must be a MaskRCNN"):
        detect(object(), np.zeros((8, 8, 3), "uint8"))
