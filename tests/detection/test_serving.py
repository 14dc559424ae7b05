"""Serving asks the model for its transform: a model that owns one (torchvision's rule, here at
a small size) is exported without ``image_size`` and gives, for photos of every orientation,
what the model gives on the transform's input, mapped back into the photo."""

import importlib.util

import numpy as np
import pytest
import tensorflow as tf

from lambda_keras.detection import (
    MaskRCNN,
    TorchvisionAnchors,
    TorchvisionTransform,
    detect,
    transform_graph,
)
from lambda_keras.detection.serving import export_detector, export_detector_onnx
from tests.backend import numpy
from tests.detection.tiny import tiny_backbone, tiny_valid_backbone

TRANSFORM = TorchvisionTransform(min_size=64, max_size=128)  # canvases 64 x 128 and 128 x 64


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    model = MaskRCNN(
        tiny_valid_backbone(),
        num_classes=3,
        fpn_channels=16,
        rpn_top_k=(100, 50, 50, 40),
        box_head_units=32,
        mask_head_channels=8,
        max_detections=10,
        score_threshold=0.0,  # random weights: every class scores about 1 / 4
        anchor_generator=TorchvisionAnchors(),
        roi_align_aligned=False,
        transform=TRANSFORM,
    )
    model.build((None, None, None, 3))
    path = export_detector(model, str(tmp_path_factory.mktemp("served") / "sm"))
    return model, tf.saved_model.load(path)


@pytest.mark.parametrize("shape", [(50, 80), (90, 40), (70, 70)])  # landscape, upright, square
def test_a_photo_gives_the_models_detections_in_its_pixels(exported, shape):
    model, served = exported
    photo = np.random.default_rng(sum(shape)).integers(0, 256, (*shape, 3), dtype=np.uint8)
    out = {k: v.numpy() for k, v in served.signatures["serving_default"](image=photo).items()}
    count = int(out["num_detections"])
    assert out["masks"].shape == (10, *shape) and count > 0
    boxes = out["boxes"][:count]
    assert (boxes >= 0).all() and (boxes[:, 2] <= shape[0] + 1e-3).all()
    assert (boxes[:, 3] <= shape[1] + 1e-3).all()
    assert not out["masks"][count:].any() and not out["boxes"][count:].any()
    # The model on the transform's input, by hand: resized, padded into its canvas.
    resized, size = transform_graph.resize(TRANSFORM, photo)
    canvases, first = TRANSFORM.canvases(size)
    canvas = canvases[0] if bool(first) else canvases[1]
    assert canvas == ((64, 128) if shape[0] <= shape[1] else (128, 64))
    padded = tf.image.pad_to_bounding_box(resized, 0, 0, *canvas)
    direct = model(TRANSFORM.model_inputs(padded, size))
    ratio = np.array(shape * 2, "float32") / np.array(size.numpy().tolist() * 2, "float32")
    np.testing.assert_allclose(boxes, numpy(direct["boxes"])[0][:count] * ratio, atol=1e-3)
    np.testing.assert_allclose(
        out["scores"][:count], numpy(direct["scores"])[0][:count], atol=1e-5
    )


# Upright and square (the square takes the landscape canvas: both canvases, one trace each);
# the square in the end-to-end tier.
@pytest.mark.parametrize("shape", [(90, 40), pytest.param((70, 70), marks=pytest.mark.end_to_end)])
def test_detect_returns_what_the_saved_model_serves(exported, shape):
    """``detect`` (the Keras model, any backend) and ``serving_default`` (the SavedModel)."""
    model, served = exported
    photo = np.random.default_rng(sum(shape) + 1).integers(0, 256, (*shape, 3), dtype=np.uint8)
    expected = {k: v.numpy() for k, v in served.signatures["serving_default"](image=photo).items()}
    got = detect(model, photo)
    assert set(got) == set(expected) and int(got["num_detections"]) > 0
    assert int(got["num_detections"]) == int(expected["num_detections"])
    np.testing.assert_allclose(got["boxes"], expected["boxes"], atol=1e-3)
    np.testing.assert_allclose(got["scores"], expected["scores"], atol=1e-5)
    np.testing.assert_array_equal(got["classes"], expected["classes"])
    assert got["masks"].dtype == np.uint8 and np.mean(got["masks"] != expected["masks"]) < 1e-3


def test_detect_names_a_bad_photo(exported):
    model, _ = exported
    with pytest.raises(TypeError, match="`image` must be uint8 RGB"):
        detect(model, np.zeros((20, 30, 3), "float32"))
    with pytest.raises(ValueError, match=r"`image` must be one RGB photo .* \(2, 20, 30, 3\)"):
        detect(model, np.zeros((2, 20, 30, 3), "uint8"))
    with pytest.raises(TypeError, match="`model` must be a MaskRCNN"):
        detect("model.keras", np.zeros((20, 30, 3), "uint8"))


@pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("tf2onnx", "onnx", "onnxruntime")),
    reason="the ONNX export needs tf2onnx, onnx and onnxruntime (pip install them)",
)
def test_the_onnx_model_with_the_transform_gives_detect(exported, tmp_path):
    """The model as ONNX (onnxruntime) between the transform's resize and its mapping back
    gives what ``detect`` gives on a landscape photo."""
    import onnxruntime

    model, _ = exported
    path = export_detector_onnx(model, tmp_path / "detector.onnx")
    session = onnxruntime.InferenceSession(path)
    photo = np.random.default_rng(5).integers(0, 256, (50, 80, 3), dtype=np.uint8)
    size = TRANSFORM.resized_size(50, 80)
    resized = tf.image.resize(tf.cast(photo, tf.float32), size).numpy()
    padded = np.zeros((1, 64, 128, 3), "float32")
    padded[0, : size[0], : size[1]] = resized
    names = {i.name: i.name for i in session.get_inputs()}
    feeds = {
        next(n for n in names if n.endswith("images")): padded,
        next(n for n in names if n.endswith("image_sizes")): np.array([size], "int32"),
    }
    out = dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds), strict=True))
    boxes, masks = TRANSFORM.to_photo(out["boxes"][0], out["masks"][0], size, (50, 80))
    expected = detect(model, photo)
    count = int(expected["num_detections"])
    assert int(out["valid"].sum()) == count > 0
    np.testing.assert_allclose(np.asarray(boxes)[:count], expected["boxes"][:count], atol=1e-3)
    np.testing.assert_allclose(out["scores"][0][:count], expected["scores"][:count], atol=1e-5)
    assert np.mean(np.asarray(masks)[:count] != expected["masks"][:count].astype(bool)) < 1e-3


@pytest.mark.parametrize(
    "category, error, message",
    [
        ({"id": True, "name": "a"}, ValueError, r"\[0\]=\{'id': True, 'name': 'a'\}"),
        ({"id": 1.0, "name": "a"}, ValueError, r"\[0\]=\{'id': 1.0, 'name': 'a'\}"),
        ({"id": -1, "name": "a"}, ValueError, r"\[0\]=\{'id': -1, 'name': 'a'\}"),
        ({"name": "a"}, ValueError, r"\[0\]=\{'name': 'a'\}"),
        ({"id": 1, "name": 7}, ValueError, r"\[0\]=\{'id': 1, 'name': 7\}"),
        ("a", ValueError, r"\[0\]='a'"),
    ],
)
def test_categories_that_labels_json_would_misstate_are_refused(tmp_path, category, error, message):
    """A bool is an int to Python: ``True`` was written to labels.json as category 1. Set after
    the model is made (as a loaded or edited model may hold them); refused before anything is
    written, the model never built."""
    model = MaskRCNN(tiny_backbone(), num_classes=1, categories=[{"id": 1, "name": "a"}])
    model.categories = [category]
    form = r"^`model.categories` must be a list of one \{'id': int >= 0, 'name': str\} per class"
    with pytest.raises(error, match=form + r" \(1\); received model.categories" + message):
        export_detector(model, str(tmp_path / "sm"), 128)
    assert not (tmp_path / "sm").exists()
