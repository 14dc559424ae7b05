"""Serving asks the model for its transform: a model that owns one (torchvision's rule, here at
a small size) is exported without ``image_size`` and gives, for photos of every orientation,
what the model gives on the transform's input, mapped back into the photo."""

import numpy as np
import pytest
import tensorflow as tf

from lambda_keras.detection import MaskRCNN, TorchvisionTransform
from lambda_keras.detection.serving import export_detector
from tests.detection.tiny import tiny_valid_backbone

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
        anchor_rule="torchvision",
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
    resized, size = TRANSFORM.resize(photo)
    canvases, first = TRANSFORM.canvases(size)
    canvas = canvases[0] if bool(first) else canvases[1]
    assert canvas == ((64, 128) if shape[0] <= shape[1] else (128, 64))
    padded = tf.image.pad_to_bounding_box(resized, 0, 0, *canvas)
    direct = model(TRANSFORM.model_inputs(padded, size))
    ratio = np.array(shape * 2, "float32") / np.array(size.numpy().tolist() * 2, "float32")
    np.testing.assert_allclose(boxes, direct["boxes"].numpy()[0][:count] * ratio, atol=1e-3)
    np.testing.assert_allclose(
        out["scores"][:count], direct["scores"].numpy()[0][:count], atol=1e-5
    )
