"""detect: one photo of any shape through the model's transform, the detections back in the
photo's pixels, and a bad photo named before anything runs."""

import keras
import numpy as np
import pytest

from lambda_keras.backend import devices, glibc_heap
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


CANVAS_SHAPES = {"landscape": (60, 70), "upright": (70, 60), "square": (60, 60)}
# Every shape with each anchor generator: the photos with three canvases, one with each
# generator, in the quick tier, the other four cases in the end-to-end tier.
QUICK_CANVAS_CASES = {("landscape", "CentredAnchors"), ("upright", "TorchvisionAnchors")}


@pytest.mark.parametrize(
    "shape, anchors",
    [
        pytest.param(
            shape,
            anchors,
            id=f"{name}-{anchors}",
            marks=() if (name, anchors) in QUICK_CANVAS_CASES else pytest.mark.end_to_end,
        )
        for name, shape in CANVAS_SHAPES.items()
        for anchors in ("TorchvisionAnchors", "CentredAnchors")
    ],
)
def test_every_canvas_gives_the_same_detections(shape, anchors, monkeypatch):
    """What eager PyTorch pads a photo to (each side to a multiple of 64), the canvas of the
    backends that compile a program per shape (the smallest of a few) and the serving graph's
    fixed canvas: the model zeroes its maps beyond the photo and its anchors there are not
    valid (torchvision's, as a converted model has, and the project's), so the same
    detections."""
    from lambda_keras import detection
    from lambda_keras.detection import MaskRCNN, TorchvisionTransform
    from lambda_keras.detection.transform import InputTransform
    from tests.detection.tiny import TINY_HEADS, tiny_valid_backbone

    # Long sides 256, 384 and 512: a landscape photo resized to 256 x 298 takes (256, 320)
    # (smallest), (256, 384) (compiled) and (256, 512) (serving).
    transform = TorchvisionTransform(min_size=256, max_size=512)
    heads = {**TINY_HEADS, "max_detections": 5, "score_threshold": 0.0}
    model = MaskRCNN(
        tiny_valid_backbone(),
        num_classes=3,
        transform=transform,
        anchor_generator=getattr(detection, anchors)(),
        **heads,
    )
    photo = np.random.default_rng(1).integers(0, 256, (*shape, 3), dtype="uint8")
    size = transform.resized_size(*shape)
    serving, landscape = transform.canvases(size)
    canvases = {
        "serving": serving[0] if landscape else serving[1],
        "smallest": transform.canvas(size, smallest=True),
        "compiled": transform.canvas(size),
    }
    assert len(set(canvases.values())) == (2 if shape[0] == shape[1] else 3), canvases
    found = {}
    for name, chosen in canvases.items():
        monkeypatch.setattr(InputTransform, "canvas", lambda *_, c=chosen, **__: c)
        found[name] = detect(model, photo)
    for name in ("smallest", "compiled"):
        _assert_same_detections(found[name], found["serving"])


def _assert_same_detections(found, expected):
    assert int(found["num_detections"]) == int(expected["num_detections"]) > 0
    for key in ("boxes", "scores"):
        np.testing.assert_allclose(found[key], expected[key], rtol=1e-4, atol=1e-3)
    np.testing.assert_array_equal(found["classes"], expected["classes"])
    assert np.mean(found["masks"] != expected["masks"]) < 1e-3


def test_on_a_cpu_glibc_keeps_the_buffers_where_the_backend_s_allocator_does_not(
    detector, monkeypatch
):
    """JAX and PyTorch on a CPU: glibc's settings (once per process, the switch and the user's
    own variables read by keep_buffers_in_heap); TensorFlow's allocator keeps its own memory;
    nothing is set before the photo is checked."""
    calls = []
    monkeypatch.setattr(glibc_heap, "keep_buffers_in_heap", lambda: calls.append(1) or True)
    with pytest.raises(ValueError, match="height, width, 3"):
        detect(detector, np.zeros((32, 32), "uint8"), image_size=64)
    assert calls == []
    detect(detector, np.zeros((40, 56, 3), "uint8"), image_size=64)
    on_cpu = keras.backend.backend() in ("jax", "torch") and not devices.has_accelerator()
    assert calls == ([1] if on_cpu else [])
