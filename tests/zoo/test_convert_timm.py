"""The timm -> Keras converter, without PyTorch.

timm's state dicts' tensor names and shapes (``timm_states.py``: timm 1.0.31's, written by
``timm_equivalence.py --models=lambda_resnet26t,lambda_resnet26rpt_256,lambda_resnet50ts,
resnet_rs50 --write-shapes``): the converter must accept exactly those. Equivalence of the
converted models' logits with timm's is checked under ``-m slow`` (``test_timm_equivalence.py``).
"""

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest

from lambda_keras import zoo
from lambda_keras.zoo import convert_timm, timm_checkpoint
from lambda_keras.zoo import weights as weights_lib
from tests.backend import numpy
from tests.zoo.timm_states import SHAPES, random_state

safetensors_numpy = pytest.importorskip("safetensors.numpy")

ROOT = Path(__file__).resolve().parents[2]


def test_the_fixture_covers_every_family():
    assert set(convert_timm.LAMBDA_RESNETS) | {"resnet_rs50"} == set(SHAPES)
    assert set(SHAPES) <= set(convert_timm.MODELS)


@pytest.mark.parametrize("name", list(convert_timm.LAMBDA_RESNETS))
def test_every_timm_tensor_lands_in_its_keras_weight(name):
    model = zoo.get_model(name)
    state = random_state(name)
    convert_timm.assign_checkpoint(model, state, name)
    weights = {w.path: numpy(w) for w in model.weights}
    kernel = weights["stem_1_conv/kernel"]  # [3, 3, 3, 24] from timm's [24, 3, 3, 3]
    np.testing.assert_array_equal(kernel, state["stem.conv1.conv.weight"].transpose(2, 3, 1, 0))
    np.testing.assert_array_equal(weights["predictions/kernel"], state["head.fc.weight"].T)
    np.testing.assert_array_equal(
        weights["c4_block2_2_bn/moving_variance"], state["stages.2.1.post_attn.running_var"]
    )
    np.testing.assert_array_equal(
        weights["c4_block2_2_lambda/qkv_kernel"],
        state["stages.2.1.self_attn.qkv.weight"][:, :, 0, 0].T,
    )
    embeddings = weights["c4_block2_2_lambda/position_embedding/embeddings"]
    if "stages.2.1.self_attn.pos_emb" in state:  # [31, 31, 16] -> [31, 31, 1, 16, 1]
        np.testing.assert_array_equal(
            embeddings[:, :, 0, :, 0], state["stages.2.1.self_attn.pos_emb"]
        )
    else:  # Conv3d [16, 1, 9, 9, 1] -> [9, 9, 1, 16, 1]; its bias [16] -> [1, 16]
        conv = state["stages.2.1.self_attn.conv_lambda.weight"][:, 0, :, :, 0]
        np.testing.assert_array_equal(embeddings[:, :, 0, :, 0], conv.transpose(1, 2, 0))
        np.testing.assert_array_equal(
            weights["c4_block2_2_lambda/position_bias"][0],
            state["stages.2.1.self_attn.conv_lambda.bias"],
        )


def test_every_resnet_rs_tensor_lands_in_its_keras_weight():
    model = zoo.ResNetRS50()
    state = random_state("resnet_rs50")
    convert_timm.assign_checkpoint(model, state, "resnet_rs50")
    weights = {w.path: numpy(w) for w in model.weights}
    pairs = {
        "stem_3_bn/gamma": state["bn1.weight"],
        "stem_4_conv/kernel": state["maxpool.0.weight"].transpose(2, 3, 1, 0),
        "c3_block1_shortcut_conv/kernel": state["layer2.0.downsample.1.weight"].transpose(
            2, 3, 1, 0
        ),
        "c3_block1_shortcut_bn/moving_mean": state["layer2.0.downsample.2.running_mean"],
        "c5_block3_se_reduce/bias": state["layer4.2.se.fc1.bias"],
        "c5_block3_se_expand/kernel": state["layer4.2.se.fc2.weight"].transpose(2, 3, 1, 0),
        "c4_block6_2_conv/kernel": state["layer3.5.conv2.weight"].transpose(2, 3, 1, 0),
        "predictions/bias": state["fc.bias"],
    }
    for path, expected in pairs.items():
        np.testing.assert_array_equal(weights[path], expected, err_msg=path)
    with pytest.raises(ValueError, match="squeeze-and-excitation: pass se=True"):
        zoo.ResNetRS50(se=False, weights="imagenet")
    spec = weights_lib.resolve_weights("imagenet", "resnet_rs101")
    assert (spec.name, spec.input_size, spec.crop_fraction) == ("resnetrs101.tf_in1k", 288, 0.94)


def test_bad_checkpoints_name_the_tensor_and_assign_nothing():
    model = zoo.LambdaResNet26T()
    before = [numpy(w).copy() for w in model.weights]
    state = random_state("lambda_resnet26t")
    cases = {
        "missing": (
            {k: v for k, v in state.items() if k != "stages.3.1.conv3_1x1.bn.bias"},
            r"1 weight\(s\).*c5_block2_3_bn/beta",
        ),
        "unexpected": (
            {**state, "stages.2.1.attn.fc.weight": np.zeros(3)},
            r"Unexpected tensor 'stages.2.1.attn.fc.weight'",
        ),
        "shape": (
            {**state, "stages.0.0.conv1_1x1.conv.weight": np.zeros((64, 64, 3, 3), "f")},
            r"Shape mismatch for 'c2_block1_1_conv/kernel'.*\(3, 3, 64, 64\).*\(1, 1, 64, 64\)",
        ),
    }
    for state_case, message in cases.values():
        with pytest.raises(ValueError, match=message):
            convert_timm.assign_checkpoint(model, state_case, "lambda_resnet26t")
    other = random_state("lambda_resnet50ts")
    with pytest.raises(ValueError, match="does not hold timm's 'lambda_resnet26t'"):
        convert_timm.assign_checkpoint(model, other, "lambda_resnet26t")
    for old, w in zip(before, model.weights, strict=True):
        np.testing.assert_array_equal(old, numpy(w))


@pytest.mark.end_to_end
def test_command_line_converts_and_the_builder_loads(tmp_path):
    state = random_state("lambda_resnet26t", seed=3)
    checkpoint = tmp_path / "model.safetensors"
    safetensors_numpy.save_file(state, str(checkpoint))
    output = tmp_path / "lambda_resnet26t.weights.h5"
    command = [sys.executable, "-m", "lambda_keras.zoo.convert_timm", "--model=lambda_resnet26t"]
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run(
        [*command, f"--checkpoint={checkpoint}", f"--output={output}"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"Wrote {output}" in done.stdout
    converted = zoo.LambdaResNet26T(weights=str(output))
    expected = zoo.LambdaResNet26T()
    convert_timm.assign_checkpoint(expected, state, "lambda_resnet26t")
    x = np.random.default_rng(0).normal(size=(1, 256, 256, 3)).astype("float32")
    np.testing.assert_array_equal(numpy(converted(x)), numpy(expected(x)))

    if keras.backend.backend() == "tensorflow":  # export.py serves through TensorFlow
        check_export_script(output, tmp_path, env)

    # A checkpoint with a tensor missing: one line naming it, exit 1, nothing written.
    del state["head.fc.bias"]
    broken = tmp_path / "broken.safetensors"
    safetensors_numpy.save_file(state, str(broken))
    not_written = tmp_path / "broken.weights.h5"
    done = subprocess.run(
        [*command, f"--checkpoint={broken}", f"--output={not_written}"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=600,
    )
    assert done.returncode == 1
    assert "predictions/bias" in done.stderr and "Nothing was written" in done.stderr
    assert "Traceback" not in done.stderr
    assert not not_written.exists() and list(tmp_path.glob("*.weights.h5")) == [output]


def check_export_script(output, tmp_path, env):
    """The export script serves converted weights at their evaluation size."""
    export = [sys.executable, str(ROOT / "scripts" / "export.py")]
    done = subprocess.run(
        [
            *export,
            "--zoo_model=lambda_resnet26t",
            f"--weights={output}",
            f"--export_dir={tmp_path / 'sm'}",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "at 256x256, crop 0.875" in done.stdout and (tmp_path / "sm" / "saved_model.pb").exists()
    done = subprocess.run(
        [*export, "--zoo_model=lambda_resnet_26t", f"--export_dir={tmp_path / 'x'}"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=600,
    )
    assert done.returncode != 0 and "Did you mean 'lambda_resnet26t'" in done.stderr


def test_the_command_line_takes_timms_names():
    from tests.script_flags import assert_refused, parse

    flag_values = parse(convert_timm, "--model=resnetrs101", "--checkpoint=c", "--output=o")
    assert convert_timm.TIMM_NAMES[flag_values.model] == "resnet_rs101"
    assert "resnetrs50 ... resnetrs420 are resnet_rs50" in flag_values["model"].help
    assert_refused(convert_timm, "--model=resnet50", "value should be one of")


def test_read_checkpoint_errors(tmp_path):
    with pytest.raises(ValueError, match="is not a file"):
        convert_timm.read_checkpoint(tmp_path / "nope.safetensors")
    damaged = tmp_path / "damaged.safetensors"
    damaged.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json")
    with pytest.raises(ValueError, match="not a readable .safetensors file"):
        convert_timm.read_checkpoint(damaged)
    other = tmp_path / "model.npz"
    other.write_bytes(b"")
    with pytest.raises(ValueError, match=r"must be a .safetensors, .bin, .pth or .pt file"):
        convert_timm.read_checkpoint(other)
    with pytest.raises(ValueError, match="`output` must end in .weights.h5"):
        convert_timm.convert("lambda_resnet26t", damaged, tmp_path / "out.h5")
    with pytest.raises(ValueError, match="`model` must be one of"):
        convert_timm.convert("resnet50", damaged, tmp_path / "out.weights.h5")


def test_registered_timm_weights_convert_once_and_are_cached(tmp_path, monkeypatch):
    """``weights=name`` of a timm-format file: fetched, checked, converted, cached."""
    monkeypatch.setattr(weights_lib, "CACHE_DIR", str(tmp_path / "cache"))
    state = random_state("lambda_resnet26t", seed=5)
    served = tmp_path / "served.safetensors"
    safetensors_numpy.save_file(state, str(served))
    spec = weights_lib.WeightsSpec(
        name="test_timm_26t",
        url=served.as_uri(),
        sha256=hashlib.sha256(served.read_bytes()).hexdigest(),
        architecture="lambda_resnet26t",
        input_size=256,
        crop_fraction=0.94,
        source_format="timm",
    )
    weights_lib.register_weights(spec)
    try:
        first = zoo.LambdaResNet26T(weights="test_timm_26t")
        cached = tmp_path / "cache" / "lambda_keras" / "test_timm_26t.weights.h5"
        assert cached.exists()
        monkeypatch.setattr(timm_checkpoint, "assign_checkpoint", None)  # must not convert again
        second = zoo.LambdaResNet26T(weights="test_timm_26t", include_top=False, pooling="avg")
        x = np.random.default_rng(1).normal(size=(1, 256, 256, 3)).astype("float32")
        np.testing.assert_allclose(
            numpy(second(x)),
            numpy(keras.Model(first.input, first.get_layer("avg_pool").output)(x)),
            rtol=1e-6,
            atol=1e-6,
        )
    finally:
        weights_lib.unregister_weights("test_timm_26t")


def test_resnet_rs_backbone_starts_from_a_converted_timm_checkpoint(tmp_path):
    """The detection path of the ResNet-RS ImageNet weights: timm's ``resnetrs50`` checkpoint
    (random tensors with timm's names here), converted, loads into ``ResNetRSBackbone`` without
    the classifier head, and the pyramid equals the classifier's stage outputs."""
    checkpoint = tmp_path / "model.safetensors"
    safetensors_numpy.save_file(random_state("resnet_rs50", seed=4), str(checkpoint))
    # timm's own name, resnetrs50, is an alias of resnet_rs50.
    converted = convert_timm.convert("resnetrs50", checkpoint, tmp_path / "rs50.weights.h5")
    classifier = zoo.ResNetRS50(weights=converted, input_shape=(64, 64, 3))
    backbone = zoo.ResNetRSBackbone(50, weights=converted, batch_norm="frozen")
    x = np.random.default_rng(0).uniform(0, 1, (1, 64, 64, 3)).astype("float32")
    for level, layer in (("P3", "c3_block4_out"), ("P5", "features")):
        stage = keras.Model(classifier.input, classifier.get_layer(layer).output)
        expected = numpy(stage(x, training=False))
        got = numpy(backbone(x)[level])
        np.testing.assert_allclose(got, expected, atol=1e-4 * max(1.0, np.abs(expected).max()))
