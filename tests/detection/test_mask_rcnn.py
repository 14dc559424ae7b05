import keras
import numpy as np
import pytest

from lambda_keras import zoo
from lambda_keras.detection import MaskRCNN, mask_rcnn, targets
from tests.backend import numpy
from tests.detection.tiny import synthetic_batch, tiny_backbone, tiny_detector


def _check_detections(out, batch, size):
    assert out["boxes"].shape == (batch, 10, 4) and out["masks"].shape == (batch, 10, 28, 28)
    valid = numpy(out["valid"])
    boxes = numpy(out["boxes"])
    assert ((boxes >= 0) & (boxes <= size)).all()
    assert (numpy(out["classes"])[~valid] == -1).all()
    assert (numpy(out["classes"])[valid] < 3).all()
    assert np.isfinite(numpy(out["masks"])).all()


# XLA on TensorFlow's CPU compiles for 20 s: under -m slow (the JAX child run compiles the
# step with XLA in the default run). On PyTorch jit_compile=True is the project's compiled step,
# as users get it (torch_compiled); with LAMBDA_KERAS_TORCH_COMPILE=0 it would be Keras' own
# torch.compile, which PyTorch 2.11's Inductor cannot compile for this model (pytorch#185510,
# the stride order of a channels-last map with dynamic shapes).
@pytest.mark.parametrize(
    "jit_compile",
    [False, pytest.param(True, marks=[pytest.mark.slow, pytest.mark.torch_compiled])],
)
def test_fit_step_and_predict(jit_compile):
    model = tiny_detector()
    model.compile(optimizer=keras.optimizers.SGD(0.01), jit_compile=jit_compile)
    images, targets = synthetic_batch()
    history = model.fit(images, targets, batch_size=2, epochs=1, verbose=0).history
    assert set(history) == {
        "loss",
        "rpn_objectness_loss",
        "rpn_box_loss",
        "classification_loss",
        "box_loss",
        "mask_loss",
        "dropped_targets",
    }
    assert history["dropped_targets"] == [0.0]
    assert all(np.isfinite(v[0]) for v in history.values())
    _check_detections(model.predict(images, verbose=0), 2, 64)


@pytest.mark.end_to_end  # fifteen epochs
def test_losses_fall_on_a_repeated_batch():
    keras.utils.set_random_seed(0)
    model = tiny_detector()
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    images, targets = synthetic_batch()
    losses = model.fit(images, targets, batch_size=2, epochs=15, verbose=0).history["loss"]
    # The sampled anchors and RoIs change each step: the last epochs' best, not the last one.
    assert min(losses[-4:]) < 0.62 * losses[0], losses


def test_images_without_objects_and_degenerate_boxes_give_finite_losses():
    model = tiny_detector()
    images, targets = synthetic_batch()
    targets["classes"][0] = -1  # image 0: no objects
    targets["boxes"][1, 1] = [10.0, 10.0, 30.0, 10.0]  # zero width
    losses = model.compute_losses(images, targets)
    assert all(np.isfinite(float(v)) for v in losses.values()), losses


def test_lambda_resnet_backbone_and_saving(tmp_path):
    backbone = zoo.LambdaResNetBackbone(50, width_multiplier=0.25)
    model = tiny_detector(backbone)
    images, _ = synthetic_batch(batch=1)
    expected = model(images)
    model.save(tmp_path / "mask_rcnn.keras")
    loaded = keras.saving.load_model(tmp_path / "mask_rcnn.keras")
    got = loaded(images)
    for key in ("boxes", "scores", "masks"):
        np.testing.assert_allclose(numpy(got[key]), numpy(expected[key]), atol=1e-4)
    _check_detections(got, 1, 64)


@pytest.mark.end_to_end  # trained, saved and loaded
def test_fit_alone_builds_the_model_and_saving_keeps_the_trained_weights(tmp_path):
    # Regression: after `fit` without a call, the model was not `built` (no `count_params`),
    # and a `.keras` file of it loaded with freshly initialised heads (different detections).
    model = tiny_detector()
    model.compile(optimizer=keras.optimizers.SGD(0.01))
    images, targets = synthetic_batch()
    model.fit(images, targets, batch_size=2, epochs=1, verbose=0)
    assert model.built and model.count_params() > 0
    model.save(tmp_path / "fitted.keras")
    loaded = keras.saving.load_model(tmp_path / "fitted.keras")
    assert loaded.count_params() == model.count_params()
    expected, got = model(images), loaded(images)
    for key in ("boxes", "scores", "classes", "masks"):
        np.testing.assert_allclose(numpy(got[key]), numpy(expected[key]), atol=1e-4)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"num_classes": 0}, "`num_classes` must be a positive integer"),
        ({"rpn_top_k": (1, 2)}, "`rpn_top_k` must hold 4"),
        ({"rpn_top_k": 1000}, r"`rpn_top_k` must hold 4 positive ints; received 1000"),
        ({"rpn_top_k": None}, r"`rpn_top_k` must hold 4 positive ints; received None"),
        ({"score_threshold": 2.0}, "`score_threshold`"),
        ({"backbone": "resnet50"}, "`backbone` must be a keras.Model"),
    ],
)
def test_bad_arguments(kwargs, match):
    arguments = {"backbone": tiny_backbone(), "num_classes": 3, **kwargs}
    with pytest.raises((ValueError, TypeError), match=match):
        MaskRCNN(**arguments)


def test_image_size_not_multiple_of_64():
    with pytest.raises(ValueError, match=r"multiples of 64.*\(1, 96, 64, 3\)"):
        tiny_detector()(np.zeros((1, 96, 64, 3), "float32"))


# float16 (with Keras' loss scaling) in the quick tier, bfloat16 in the end-to-end tier
@pytest.mark.parametrize(
    "policy", [pytest.param("mixed_bfloat16", marks=pytest.mark.end_to_end), "mixed_float16"]
)
def test_mixed_precision_trains_and_detects_in_float32(policy):
    keras.config.set_dtype_policy(policy)
    model = tiny_detector()
    model.compile(optimizer=keras.optimizers.SGD(0.01))
    images, targets = synthetic_batch()
    history = model.fit(images, targets, batch_size=2, epochs=1, verbose=0).history
    assert all(np.isfinite(v[0]) for v in history.values()), history
    out = model.predict(images, verbose=0)
    assert out["boxes"].dtype == np.float32 and out["masks"].dtype == np.float32
    _check_detections(out, 2, 64)


def test_masks_are_cropped_from_their_own_frames(monkeypatch):
    """``mask_boxes`` (a mask's frame, where a crop clipped its box) places each mask; without
    it the boxes do."""
    from lambda_keras.detection import targets as targets_module

    seen = []
    crop = targets_module.crop_instance_masks
    monkeypatch.setattr(
        targets_module,
        "crop_instance_masks",
        lambda masks, frames, *args, **kwargs: (
            seen.append(np.asarray(frames)) or crop(masks, frames, *args, **kwargs)
        ),
    )
    model = tiny_detector()
    images, y = synthetic_batch()
    model.compute_losses(images, y)
    np.testing.assert_array_equal(seen[-1], y["boxes"])
    frames = y["boxes"] + np.array([-3.0, -2.0, 4.0, 5.0], "float32")
    model.compute_losses(images, {**y, "mask_boxes": frames})
    objects = y["classes"] >= 0  # padding rows reach the loss as zeros
    np.testing.assert_array_equal(seen[-1][objects], frames[objects])
    assert objects.any() and (seen[-1][~objects] == 0).all()


def test_predict_on_a_smaller_last_batch():
    """Keras' predict function (TensorFlow) relaxes the batch size after a second one: the
    evaluation's last, smaller batch must still detect."""
    model = tiny_detector()
    images = np.zeros((2, 64, 64, 3), "float32")
    _check_detections(model.predict_on_batch(images), 2, 64)
    _check_detections(model.predict_on_batch(images[:1]), 1, 64)


def _sampled(valid: np.ndarray, classes: np.ndarray, num_foreground: int) -> targets.RoiTargets:
    batch, count = classes.shape
    return targets.RoiTargets(
        rois=keras.ops.zeros((batch, count, 4)),
        valid=keras.ops.convert_to_tensor(valid),
        classes=keras.ops.convert_to_tensor(classes, "int32"),
        deltas=keras.ops.zeros((batch, count, 4)),
        matched=keras.ops.zeros((batch, count), "int32"),
        num_foreground=num_foreground,
    )


def test_eager_pytorch_cuts_the_slots_to_the_taken_and_the_foreground():
    # Taken slots first (3 and 1), foreground first among them (2 and 1) in F = 4 slots.
    valid = np.array([[1, 1, 1, 0, 0, 0], [1, 0, 0, 0, 0, 0]], bool)
    classes = np.array([[3, 1, 0, 0, 0, 0], [2, 0, 0, 0, 0, 0]], "int32")
    sampled = _sampled(valid, classes, 4)
    trimmed = mask_rcnn._trimmed(sampled)
    if keras.backend.backend() != "torch":  # JAX; TensorFlow cuts in its own graphs (below)
        assert trimmed is sampled and mask_rcnn._mask_roi_count(sampled) == 4
        return
    assert trimmed.num_foreground == 3
    for name in ("rois", "valid", "classes", "deltas", "matched"):
        assert tuple(getattr(trimmed, name).shape[:2]) == (2, 3), name
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(trimmed.classes), classes[:, :3])
    assert mask_rcnn._mask_roi_count(trimmed) == 2
    nothing = _sampled(np.zeros_like(valid), np.zeros_like(classes), 4)
    assert tuple(mask_rcnn._trimmed(nothing).rois.shape[:2]) == (2, 1)  # never empty
    assert mask_rcnn._mask_roi_count(nothing) == 1


@pytest.mark.skipif(keras.backend.backend() == "jax", reason="jit: static shapes only")
def test_the_step_losses_are_the_same_on_the_taken_slots_alone(monkeypatch):
    monkeypatch.setattr(targets, "_random_keys", _scrambled_keys)
    model = tiny_detector(rois_per_image=64)  # more than the proposals NMS keeps
    model.compile(optimizer=keras.optimizers.SGD(0.01))
    images, y = synthetic_batch()
    cuts = []
    trim = mask_rcnn._trimmed

    def spy(sampled, tensorflow_graph=False):
        cuts.append((trim(sampled, tensorflow_graph).rois.shape[1], tensorflow_graph))
        return trim(sampled, tensorflow_graph)

    monkeypatch.setattr(mask_rcnn, "_trimmed", spy)
    trimmed = model.test_on_batch(images, y, return_dict=True)
    if keras.backend.backend() == "torch":
        assert cuts[-1][0] < 64  # cut to the taken slots
    else:
        assert cuts[-1] == (None, True)  # a TensorFlow graph without XLA: cut at run time
    monkeypatch.setattr(mask_rcnn, "_varying_shapes", lambda tensor, tensorflow_graph=False: False)
    model.make_test_function(force=True)
    full = model.test_on_batch(images, y, return_dict=True)
    assert cuts[-1][0] == 64 and full["mask_loss"] > 0
    assert trimmed.keys() == full.keys()
    for name in full:
        np.testing.assert_allclose(trimmed[name], full[name], rtol=1e-5, err_msg=name)


def test_xla_and_compute_losses_keep_static_shapes(monkeypatch):
    model = tiny_detector()
    model.compile(optimizer=keras.optimizers.SGD(0.01), jit_compile=True)
    assert not model._step_without_xla()
    model.compile(optimizer=keras.optimizers.SGD(0.01), jit_compile=False)
    assert model._step_without_xla() == (keras.backend.backend() == "tensorflow")
    graphs = []
    trim = mask_rcnn._trimmed

    def spy(sampled, tensorflow_graph=False):
        graphs.append(tensorflow_graph)
        return trim(sampled, tensorflow_graph)

    monkeypatch.setattr(mask_rcnn, "_trimmed", spy)
    model.compute_losses(*synthetic_batch())
    assert graphs == [False]  # a caller's own function may be XLA's


def _scrambled_keys(mask, seed):
    """Sampling keys that do not depend on the random generator (the two calls sample alike)."""
    del seed
    positions = keras.ops.arange(mask.shape[-1], dtype="float32")
    keys = keras.ops.broadcast_to((positions * 0.6180339887) % 1.0, keras.ops.shape(mask))
    return keras.ops.where(mask, keys, -1.0)


def test_detections_are_the_same_on_the_kept_proposals_alone(monkeypatch):
    keras.utils.set_random_seed(0)
    model = tiny_detector(score_threshold=0.25, max_detections=60)  # about 30 of 60 detected
    images, _ = synthetic_batch()
    model(images)  # built
    heads = []
    box_head, mask_head = model.box_head.call, model.mask_head.call
    monkeypatch.setattr(model.box_head, "call", lambda x: heads.append(x.shape[1]) or box_head(x))
    monkeypatch.setattr(model.mask_head, "call", lambda x: heads.append(x.shape[1]) or mask_head(x))
    cut = {k: keras.ops.convert_to_numpy(v) for k, v in model(images).items()}
    monkeypatch.setattr(mask_rcnn, "_varying_shapes", lambda tensor, tensorflow_graph=False: False)
    full = {k: keras.ops.convert_to_numpy(v) for k, v in model(images).items()}
    detected = int(full["valid"].sum(1).max())
    assert 0 < detected < model.max_detections
    assert heads[2:] == [model.rpn_top_k[3], model.max_detections]  # the static path
    if keras.backend.backend() == "torch":  # eager: the heads on what NMS and the rule kept
        assert heads[0] <= model.rpn_top_k[3] and heads[1] == detected
    for name in full:
        np.testing.assert_allclose(cut[name], full[name], rtol=1e-5, atol=1e-6, err_msg=name)
    assert not full["masks"][~full["valid"]].any()  # padding: zero masks on every backend
