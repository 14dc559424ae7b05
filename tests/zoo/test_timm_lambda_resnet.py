"""The Keras ports of timm's LambdaResNets: architecture, inputs, preprocessing, class names.

Equivalence with timm itself (which needs PyTorch) is ``test_timm_equivalence.py`` under
``-m slow``; the converter is ``test_convert_timm.py``.
"""

import re

import numpy as np
import pytest

from lambda_keras import zoo
from lambda_keras.layers import LambdaLayer
from lambda_keras.zoo import timm_lambda_resnet as tlr
from lambda_keras.zoo import weights as weights_lib
from tests.backend import numpy

NAMES = ["lambda_resnet26t", "lambda_resnet26rpt_256", "lambda_resnet50ts"]


def trainable_parameters(model):
    return sum(int(np.prod(w.shape)) for w in model.trainable_weights)


@pytest.mark.parametrize(
    "name,parameters",
    [("lambda_resnet26t", 10_958_272), ("lambda_resnet26rpt_256", 10_988_688)]
    + [("lambda_resnet50ts", 21_536_832)],
)
def test_parameter_counts_are_timms(name, parameters):
    """timm counts parameters (batch-norm statistics are buffers): Keras' trainable weights."""
    model = zoo.get_model(name)
    assert trainable_parameters(model) == parameters == tlr.SPECS[name].parameters
    assert model.input.shape == (None, 256, 256, 3)
    assert model.output.shape == (None, 1000)


@pytest.mark.parametrize(
    "name,placements,activation",
    [
        ("lambda_resnet26t", {"c4_block2", "c5_block1", "c5_block2"}, "relu"),
        ("lambda_resnet26rpt_256", {"c4_block2", "c5_block1", "c5_block2"}, "relu"),
        (
            "lambda_resnet50ts",
            {"c3_block4", "c4_block2", "c4_block4", "c4_block6", "c5_block2"},
            "silu",
        ),
    ],
)
def test_lambda_layers_sit_where_timm_puts_them(name, placements, activation):
    model = zoo.get_model(name)
    lambdas = [layer for layer in model.layers if isinstance(layer, LambdaLayer)]
    assert {layer.name.removesuffix("_2_lambda") for layer in lambdas} == placements
    spec = tlr.SPECS[name]
    for layer in lambdas:
        assert (layer.key_dim, layer.num_heads, layer.intra_depth) == (16, 4, 1)
        assert layer.scope_size == spec.scope_size
        assert layer.use_position_bias == (spec.scope_size is not None)  # timm's Conv3d bias
        assert (layer.batch_norm_momentum, layer.batch_norm_epsilon) == (0.9, 1e-5)
    if spec.scope_size is None:  # relative embeddings over the whole map at 256x256
        sizes = {layer.name: layer.position_embedding.size for layer in lambdas}
        assert sizes == {
            "c4_block2_2_lambda": (31, 31),
            "c5_block1_2_lambda": (31, 31),
            "c5_block2_2_lambda": (15, 15),
        }
    if "c5_block1" in placements:  # a strided lambda block pools 2x2 after the layer, 16 -> 8
        pool = model.get_layer("c5_block1_2_pool")
        assert pool.pool_size == (2, 2) and pool.output.shape[1:3] == (8, 8)
    assert model.get_layer("stem_1_bn").momentum == 0.9
    assert model.get_layer("c2_block1_out").activation.__name__ == activation


def test_rpt_input_size_is_fixed_when_built():
    model = zoo.LambdaResNet26RPT256(input_shape=(128, 128, 3), classes=10)  # random init: ok
    assert model.output.shape == (None, 10)
    with pytest.raises(ValueError, match="must have a known height and width"):
        zoo.LambdaResNet26RPT256(input_shape=(None, None, 3))
    with pytest.raises(ValueError, match="fit 256x256 inputs only.*128, 128, 3"):
        zoo.LambdaResNet26RPT256(input_shape=(128, 128, 3), weights="imagenet")


def test_local_scope_models_take_any_size():
    model = zoo.LambdaResNet26T(input_shape=(None, None, 3), include_top=False, pooling="avg")
    for side in (96, 160):
        x = np.zeros((1, side, side + 32, 3), "float32")
        assert model(x).shape == (1, 2048)


@pytest.mark.parametrize("shape", [(100, 100, 3), (65, 64, 3), (128, 97, 3)])
def test_a_size_that_meets_a_strided_lambda_block_with_an_odd_map_is_refused(shape, monkeypatch):
    """``lambda_resnet26t``'s c5 starts with a strided lambda block: its 2x2 pool (floor) and
    its shortcut (ceil) differ on an odd map, in timm too. Refused by ``input_shape`` before any
    layer is made; without the check Keras fails at the addition."""
    from lambda_keras.zoo import timm_lambda_resnet

    expected = rf"halves the c5 map .*input_shape=\({shape[0]}, {shape[1]}, 3\) gives a \d+x\d+ map"
    with pytest.raises(ValueError, match=expected):
        zoo.LambdaResNet26T(input_shape=shape, include_top=False, pooling="avg")
    monkeypatch.setattr(timm_lambda_resnet, "_check_lambda_downsampling", lambda *args: None)
    with pytest.raises(ValueError, match="incompatible shapes"):  # what the check spares
        zoo.LambdaResNet26T(input_shape=shape, include_top=False, pooling="avg")


def test_sizes_whose_strided_lambda_blocks_meet_even_maps_build():
    """Sides that are not multiples of 32 but halve evenly where it matters, and models whose
    strided blocks are convolutions (``lambda_resnet50ts``), build."""
    assert zoo.LambdaResNet26T(input_shape=(120, 88, 3), include_top=False).output.shape[1:3] == (
        4, 3,
    )  # fmt: skip
    model = zoo.LambdaResNet50TS(input_shape=(100, 100, 3), include_top=False)
    assert model.output.shape[1:3] == (4, 4)


def test_imagenet_weights_are_registered_with_their_evaluation():
    for name, spec in tlr.SPECS.items():
        resolved = weights_lib.resolve_weights("imagenet", name)
        assert resolved.name == spec.weights_name and resolved.hub_repo == spec.hub_id
        assert resolved.source_format == "timm" and resolved.classes == 1000
        assert (resolved.input_size, resolved.crop_fraction) == (256, spec.crop_fraction)
        assert resolved.origin.startswith(f"https://huggingface.co/{spec.hub_id}/blob/")
    with pytest.raises(ValueError, match=r"Unknown weights 'imagenet'"):
        zoo.LambdaResNet50(weights="imagenet")  # the alias belongs to the timm ports only


ARGUMENTS = dict(
    architecture="lambda_resnet26t",
    family="byobnet",
    hub_id="timm/lambda_resnet26t.test_in1k",
    input_size=256,
    crop_fraction=0.94,
    imagenet_top=(79.0, 94.0),
)


@pytest.mark.parametrize(
    "pin, message",
    [
        (dict(integrity="hub_commit", revision="a" * 40, source=""), "needs its `source`"),
        (dict(integrity="sha256", revision="a" * 40, source="s"), "whole SHA-256"),
        (dict(integrity="hub_commit", revision="main", source="s"), "must be a commit"),
        (dict(integrity="hub_commit", revision="abc", source="s"), "must be a commit"),
        (dict(integrity="hub_latest", revision="a" * 40, source="s"), "must be 'main'"),
        (dict(integrity="md5", revision="main", source="s"), "`integrity` must be one of"),
        (
            dict(integrity="hub_commit", revision="a" * 40, source="s", sha256="0" * 64),
            "`sha256` goes with integrity='sha256'",
        ),
    ],
)
def test_a_pin_must_name_its_rule_revision_and_source(pin, message):
    with pytest.raises(ValueError, match=message):
        weights_lib.register_timm_weights(**pin, **ARGUMENTS)
    assert "lambda_resnet26t.test_in1k" not in weights_lib.registered_weights()


def test_a_registered_pin_records_its_metrics():
    spec = weights_lib.register_timm_weights(
        integrity="hub_commit", revision="a" * 40, source="https://x", **ARGUMENTS
    )
    try:
        assert spec.metrics == {"imagenet_top1": 79.0, "imagenet_top5": 94.0}
        assert spec.origin.endswith(f"/blob/{'a' * 40}/model.safetensors")
    finally:
        weights_lib.unregister_weights(spec.name)


def test_eval_image_is_timms_resize_and_centre_crop():
    image = np.random.default_rng(0).integers(0, 256, size=(300, 400, 3), dtype=np.uint8)
    out = np.asarray(tlr.eval_image(image, "lambda_resnet26t"))
    assert out.shape == (256, 256, 3) and out.dtype == np.float32
    assert 0 <= out.min() and out.max() <= 255
    # The centre crop of a shorter side resized to round(256 / 0.94) = 272: no stretching.
    flat = np.full((300, 400, 3), 17, np.uint8)
    np.testing.assert_allclose(np.asarray(tlr.eval_image(flat, "lambda_resnet50ts")), 17, atol=1e-3)


def test_decode_predictions_is_offline_imagenet():
    scores = np.zeros((2, 1000), "float32")
    scores[0, [207, 1, 999]] = [0.7, 0.2, 0.1]
    scores[1, 0] = 1.0
    decoded = tlr.decode_predictions(scores, top=3)
    assert decoded[0] == [
        ("n02099601", "golden_retriever", pytest.approx(0.7)),
        ("n01443537", "goldfish", pytest.approx(0.2)),
        ("n15075141", "toilet_tissue", pytest.approx(0.1)),
    ]
    assert decoded[1][0][:2] == ("n01440764", "tench")
    assert len({wnid for wnid, _ in zoo.applications.imagenet_classes()}) == 1000
    with pytest.raises(ValueError, match=r"\[batch, 1000\].*\(2, 10\)"):
        tlr.decode_predictions(np.zeros((2, 10)))


@pytest.mark.parametrize(
    "bad, message",
    [
        (np.nan, "received nan at preds[1, 3] (1 of 2000 scores not finite)"),
        (np.inf, "received inf at preds[1, 3] (1 of 2000 scores not finite)"),
        (-np.inf, "received -inf at preds[1, 3] (1 of 2000 scores not finite)"),
    ],
)
def test_decode_predictions_refuses_scores_that_are_not_finite(bad, message):
    """NaN and infinite scores have no rank: refused by name, not ranked silently."""
    scores = np.zeros((2, 1000), "float32")
    scores[1, 3] = bad
    expected = f"`preds` must hold finite scores (NaN and infinities have no rank); {message}."
    with pytest.raises(ValueError, match=re.escape(expected)):
        tlr.decode_predictions(scores, top=2)
    with pytest.raises(ValueError, match=re.escape("received nan at preds[0, 0] (2000 of 2000")):
        tlr.decode_predictions(np.full((2, 1000), np.nan), top=2)  # all-NaN rows


def test_decode_predictions_takes_a_top_above_the_number_of_classes_as_all():
    """As ``keras.applications``' own: every class, best first; ``top`` below 1 is refused."""
    assert len(tlr.decode_predictions(np.zeros((1, 1000)), top=1001)[0]) == 1000
    with pytest.raises(ValueError, match=re.escape("received top=0")):
        tlr.decode_predictions(np.zeros((1, 1000)), top=0)


def test_decode_predictions_refuses_scores_that_are_not_numbers():
    with pytest.raises(TypeError, match=re.escape("`preds` must hold real-valued scores")):
        tlr.decode_predictions(np.full((1, 1000), "a"))


@pytest.mark.end_to_end  # a SavedModel written and served
def test_serving_graph_does_the_models_own_preprocessing(tmp_path):
    """The SavedModel takes JPEG bytes or uint8 pixels of any size and applies the weights'
    evaluation (256x256, crop 0.94, ImageNet mean/std) in the graph."""
    import tensorflow as tf

    from lambda_keras.preprocessing import normalize
    from lambda_keras.zoo.serving import export_for_serving

    spec = tlr.SPECS["lambda_resnet26t"]
    model = zoo.LambdaResNet26T()
    path = export_for_serving(model, str(tmp_path / "sm"), spec.image_size, spec.crop_fraction)
    served = tf.saved_model.load(path)
    image = np.random.default_rng(0).integers(0, 256, size=(300, 420, 3), dtype=np.uint8)
    expected = numpy(model(normalize(tlr.eval_image(image, spec))[None], training=False))
    by_pixels = served.signatures["serve_images"](images=tf.constant(image[None]))
    np.testing.assert_allclose(by_pixels["probabilities"].numpy(), expected, rtol=1e-4, atol=1e-6)
    png = tf.io.encode_png(tf.constant(image))  # lossless: the same pixels
    by_bytes = served.signatures["serve_bytes"](image_bytes=tf.stack([png]))
    np.testing.assert_allclose(by_bytes["probabilities"].numpy(), expected, rtol=1e-4, atol=1e-6)
    assert by_bytes["classes"].numpy()[0] == expected.argmax()
