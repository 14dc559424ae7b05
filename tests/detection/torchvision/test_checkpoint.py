"""torchvision checkpoint -> Keras weights: the tensor mapping of v1 and v2, strictness and the
converter command, on random tensors of torchvision's shapes (no PyTorch needed; the equality
with torchvision's own models is ``test_equivalence.py``, ``-m slow``)."""

import os

import numpy as np
import pytest

from lambda_keras.detection import convert_torchvision
from lambda_keras.detection.torchvision import checkpoint as torchvision_checkpoint
from lambda_keras.detection.torchvision.mask_rcnn import (
    maskrcnn_resnet50_fpn,
    maskrcnn_resnet50_fpn_v2,
)
from tests.detection.torchvision.torchvision_states import random_state as model_state

safetensors_numpy = pytest.importorskip("safetensors.numpy")


def random_state(seed=0):
    return model_state("maskrcnn_resnet50_fpn", seed)


@pytest.fixture(scope="module")
def model():
    return maskrcnn_resnet50_fpn()


@pytest.fixture(scope="module")
def model_v2():
    return maskrcnn_resnet50_fpn_v2()


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


def test_every_v2_tensor_lands_where_torchvision_uses_it(model_v2):
    state = model_state("maskrcnn_resnet50_fpn_v2", 5)
    torchvision_checkpoint.assign_checkpoint(model_v2, state)
    fc = state["roi_heads.box_head.5.weight"]  # after 4 conv blocks and the flatten: (c, y, x)
    c, y, x, o = 7, 3, 1, 2
    assert (
        model_v2.box_head.fc1.kernel.numpy()[(y * 7 + x) * 256 + c, o] == fc[o, c * 49 + y * 7 + x]
    )
    box = model_v2.box_head
    np.testing.assert_array_equal(
        box.convs[2].kernel.numpy(), state["roi_heads.box_head.2.0.weight"].transpose(2, 3, 1, 0)
    )
    np.testing.assert_array_equal(
        box.norms[3].moving_mean.numpy(), state["roi_heads.box_head.3.1.running_mean"]
    )
    np.testing.assert_array_equal(
        model_v2.mask_head.norms[1].gamma.numpy(), state["roi_heads.mask_head.1.1.weight"]
    )
    np.testing.assert_array_equal(
        model_v2.fpn.output_norms["P4"].moving_variance.numpy(),
        state["backbone.fpn.layer_blocks.2.1.running_var"],
    )
    np.testing.assert_array_equal(
        model_v2.rpn_head.convs[1].bias.numpy(), state["rpn.head.conv.1.0.bias"]
    )
    assert not model_v2.fpn.lateral["P2"].use_bias and not box.convs[0].use_bias
    assert model_v2.backbone.get_layer("bn1").epsilon == 1e-5


def test_v1_and_v2_checkpoints_are_refused_by_each_other(model, model_v2):
    v1, v2 = random_state(6), model_state("maskrcnn_resnet50_fpn_v2", 6)
    with pytest.raises(ValueError, match="not torchvision's maskrcnn_resnet50_fpn_v2: it has no"):
        torchvision_checkpoint.assign_checkpoint(model_v2, v1)
    with pytest.raises(ValueError, match="not torchvision's maskrcnn_resnet50_fpn: it has no"):
        torchvision_checkpoint.assign_checkpoint(model, v2)


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
        convert_torchvision.convert("fasterrcnn_resnet50_fpn", checkpoint, failed)
