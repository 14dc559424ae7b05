"""Starting a Mask R-CNN run from torchvision's COCO model (``--weights``): what loads where,
and the settings refused before any data is read."""

import numpy as np
import pytest

from lambda_keras.detection.torchvision.mask_rcnn import maskrcnn_resnet50_fpn
from lambda_keras.training.detection import DetectionConfig, build_model, resolve_run


@pytest.fixture(scope="module")
def coco_file(tmp_path_factory):
    """A converted-looking COCO model file (random weights)."""
    path = str(tmp_path_factory.mktemp("coco") / "coco.weights.h5")
    model = maskrcnn_resnet50_fpn()
    model.save_weights(path)
    return model, path


def test_torchvision_backbone_loads_all_but_the_class_layers(coco_file):
    coco, path = coco_file
    run = resolve_run(
        DetectionConfig(
            backbone="torchvision_resnet", weights=path, width_multiplier=1.0, recipe="finetune"
        )
    )
    model = build_model(run, num_classes=4)
    assert model.box_head.logits.kernel.shape == (1024, 5)
    np.testing.assert_array_equal(
        model.backbone.get_layer("layer4_2_conv3").kernel.numpy(),
        coco.backbone.get_layer("layer4_2_conv3").kernel.numpy(),
    )
    np.testing.assert_array_equal(model.box_head.fc2.kernel.numpy(), coco.box_head.fc2.kernel)


def test_a_lambda_backbone_takes_the_coco_fpn_rpn_and_heads(coco_file):
    coco, path = coco_file
    run = resolve_run(DetectionConfig(weights=path, width_multiplier=1.0, recipe="shapes"))
    model = build_model(run, num_classes=3)
    assert model.fpn_channels == 256 and model.box_head_units == 1024  # COCO's widths
    for name in ("fpn", "rpn_head"):
        for ours, theirs in zip(
            getattr(model, name).weights, getattr(coco, name).weights, strict=True
        ):
            np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    np.testing.assert_array_equal(
        model.mask_head.upsample.kernel.numpy(), coco.mask_head.upsample.kernel
    )
    assert model.mask_head.logits.kernel.shape == (1, 1, 256, 3)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"weights": "nothing.h5"}, "--weights must be 'coco' or an existing .weights.h5 file"),
        ({"weights": "coco"}, "need backbone stages 256/512/1024/2048 wide.*width_multiplier=0.25"),
        (
            {"backbone": "torchvision_resnet", "depth": 101, "width_multiplier": 1.0},
            "torchvision's ResNet-50 \\(depth 50, width 1.0\\).*depth=101",
        ),
        (
            {"backbone": "torchvision_resnet", "width_multiplier": 1.0, "backbone_weights": "x"},
            "starts from --weights, not --backbone_weights",
        ),
    ],
)
def test_settings_refused_before_the_data_is_read(kwargs, message):
    with pytest.raises(ValueError, match=message):
        resolve_run(DetectionConfig(**kwargs))
