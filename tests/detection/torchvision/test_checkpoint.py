"""torchvision checkpoint -> Keras weights: the tensor mapping, strictness and the converter
command, on random tensors of torchvision's shapes (no PyTorch needed; the equality with
torchvision's own model is ``test_equivalence.py``, ``-m slow``)."""

import json
import os
from pathlib import Path

import numpy as np
import pytest

from lambda_keras.detection import convert_torchvision
from lambda_keras.detection.torchvision import checkpoint as torchvision_checkpoint
from lambda_keras.detection.torchvision.mask_rcnn import maskrcnn_resnet50_fpn

safetensors_numpy = pytest.importorskip("safetensors.numpy")

# torchvision 0.29.1's maskrcnn_resnet50_fpn(num_classes=91).state_dict() shapes.
SHAPES = json.loads(Path(__file__).with_name("state_shapes.json").read_text())


def random_state(seed=0):
    rng = np.random.default_rng(seed)
    return {k: rng.normal(size=s).astype("float32") for k, s in SHAPES.items()}


@pytest.fixture(scope="module")
def model():
    return maskrcnn_resnet50_fpn()


def test_every_tensor_lands_where_torchvision_uses_it(model):
    state = random_state()
    torchvision_checkpoint.assign_checkpoint(model, state)
    fc6 = state["roi_heads.box_head.fc6.weight"]  # [1024, 256 * 7 * 7], inputs (c, y, x)
    c, y, x, o = 5, 2, 6, 11
    assert model.box_head.fc1.kernel.numpy()[(y * 7 + x) * 256 + c, o] == fc6[o, c * 49 + y * 7 + x]
    # Box deltas: torchvision's label l, (dx, dy, dw, dh) -> class l - 1, (dy, dx, dh, dw).
    bbox = state["roi_heads.box_predictor.bbox_pred.weight"]
    deltas = model.box_head.deltas.kernel.numpy()
    np.testing.assert_array_equal(deltas[:, 4 * 6 : 4 * 7], bbox[4 * 7 : 4 * 8][[1, 0, 3, 2]].T)
    rpn = state["rpn.head.bbox_pred.weight"][:, :, 0, 0]  # [3 anchors * 4, 256]
    np.testing.assert_array_equal(
        model.rpn_head.deltas.kernel.numpy()[0, 0][:, 4:8], rpn[4:8][[1, 0, 3, 2]].T
    )
    transposed = state["roi_heads.mask_predictor.conv5_mask.weight"]  # [in, out, kh, kw]
    assert model.mask_head.upsample.kernel.numpy()[1, 0, 7, 3] == transposed[3, 7, 1, 0]
    logits = state["roi_heads.mask_predictor.mask_fcn_logits.bias"]
    np.testing.assert_array_equal(model.mask_head.logits.bias.numpy(), logits[1:])
    conv = state["backbone.body.layer3.2.conv2.weight"]  # [out, in, kh, kw]
    layer = model.backbone.get_layer("layer3_2_conv2")
    np.testing.assert_array_equal(layer.kernel.numpy(), conv.transpose(2, 3, 1, 0))
    bn = model.backbone.get_layer("layer1_0_downsample_1")
    np.testing.assert_array_equal(
        bn.moving_variance.numpy(), state["backbone.body.layer1.0.downsample.1.running_var"]
    )


def test_checkpoints_saved_before_torchvision_0_13_read_the_same(model):
    state = random_state(1)
    old = {}
    for name, value in state.items():
        name = name.replace("inner_blocks.0.0.", "inner_blocks.0.").replace(
            "rpn.head.conv.0.0.", "rpn.head.conv."
        )
        name = name.replace("roi_heads.mask_head.2.0.", "roi_heads.mask_head.mask_fcn3.")
        old[name] = value
    assert len(old) == len(state) and old != state
    torchvision_checkpoint.assign_checkpoint(model, old)
    np.testing.assert_array_equal(
        model.mask_head.convs[2].bias.numpy(), state["roi_heads.mask_head.2.0.bias"]
    )
    np.testing.assert_array_equal(
        model.fpn.lateral["P2"].bias.numpy(), state["backbone.fpn.inner_blocks.0.0.bias"]
    )


@pytest.mark.parametrize(
    "change, message",
    [
        # Faster R-CNN: no mask head.
        (
            lambda s: [s.pop(k) for k in list(s) if "mask_" in k],
            "has no tensor 'roi_heads.mask_head",
        ),
        # Keypoint R-CNN's extra head.
        (
            lambda s: s.update({"roi_heads.keypoint_head.0.weight": np.zeros(1)}),
            "its tensor 'roi_heads.keypoint_head.0.weight' has no place",
        ),
        # v2's FPN has batch norms and no conv biases.
        (
            lambda s: (
                s.pop("backbone.fpn.inner_blocks.0.0.bias"),
                s.update({"backbone.fpn.inner_blocks.0.1.weight": np.zeros(256)}),
            ),
            "has no tensor 'backbone.fpn.inner_blocks.0.0.bias'",
        ),
        (
            lambda s: s.update({"backbone.body.conv1.weight": np.zeros((64, 3, 3, 3))}),
            r"'backbone.body.conv1.weight' has shape \(64, 3, 3, 3\); "
            r"the model needs \(7, 7, 3, 64\)",
        ),
    ],
)
def test_another_models_checkpoint_is_refused_naming_the_tensor(model, change, message):
    state = random_state(2)
    before = model.box_head.fc1.kernel.numpy().copy()
    change(state)
    with pytest.raises(ValueError, match=message):
        torchvision_checkpoint.assign_checkpoint(model, state)
    np.testing.assert_array_equal(model.box_head.fc1.kernel.numpy(), before)  # nothing assigned


@pytest.mark.end_to_end  # the command line, run as a script
def test_converter_writes_a_file_the_builder_loads_and_nothing_on_failure(tmp_path):
    state = random_state(3)
    state = {
        k: v
        for k, v in state.items()
        if "cls_score" not in k
        and "bbox_pred" not in k
        and "mask_fcn_logits" not in k
        or k.startswith("rpn")
    }
    rng = np.random.default_rng(4)
    for name, shape in {
        "roi_heads.box_predictor.cls_score": (5, 1024),
        "roi_heads.box_predictor.bbox_pred": (20, 1024),
    }.items():
        state[f"{name}.weight"] = rng.normal(size=shape).astype("float32")
        state[f"{name}.bias"] = rng.normal(size=shape[:1]).astype("float32")
    state["roi_heads.mask_predictor.mask_fcn_logits.weight"] = np.ones((5, 256, 1, 1), "float32")
    state["roi_heads.mask_predictor.mask_fcn_logits.bias"] = np.arange(5, dtype="float32")
    checkpoint = str(tmp_path / "four_classes.safetensors")
    safetensors_numpy.save_file(state, checkpoint)
    output = str(tmp_path / "four.weights.h5")
    assert convert_torchvision.convert("maskrcnn_resnet50_fpn", checkpoint, output) == output
    loaded = maskrcnn_resnet50_fpn(weights=output, num_classes=4)
    np.testing.assert_array_equal(loaded.mask_head.logits.bias.numpy(), [1, 2, 3, 4])
    state.pop("backbone.body.layer4.2.bn3.bias")
    safetensors_numpy.save_file(state, checkpoint)
    failed = str(tmp_path / "failed.weights.h5")
    with pytest.raises(ValueError, match="has no tensor 'backbone.body.layer4.2.bn3.bias'"):
        convert_torchvision.convert("maskrcnn_resnet50_fpn", checkpoint, failed)
    assert not os.path.exists(failed)
    with pytest.raises(ValueError, match="`model` must be one of maskrcnn_resnet50_fpn"):
        convert_torchvision.convert("maskrcnn_resnet50_fpn_v2", checkpoint, failed)
