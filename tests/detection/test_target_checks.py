"""Bad detection targets, on the backend this run uses (the JAX and PyTorch child runs too): a
ValueError naming the target, image and instance before ``fit``'s first step; inside a compiled
step (a generator), the bad rows left out of the loss and counted, never a NaN."""

import keras
import numpy as np
import pytest

from lambda_keras.detection.target_checks import check_targets, target_problems
from tests.detection.tiny import synthetic_batch, tiny_detector

NAN, INF = float("nan"), float("inf")


def _model():
    keras.utils.set_random_seed(0)
    model = tiny_detector(rpn_top_k=(64, 32, 64, 32), rois_per_image=16, max_detections=8)
    model.compile(optimizer=keras.optimizers.SGD(0.0))  # the tests compare steps, not learning
    return model


@pytest.fixture(scope="module")
def model():
    return _model()


def _batch():
    return synthetic_batch(batch=2, size=64, max_instances=4, mask_size=8)


def _set(key, index, value):
    def change(targets):
        targets[key][index] = value

    return change


# (change to the synthetic batch's targets, pattern of the error). Rows 0 and 1 of each image
# hold objects; rows 2 and 3 are padding (class -1).
BAD = {
    "class_too_large": (
        _set("classes", (1, 0), 7),
        r"`targets\['classes'\]` of image 1, instance 0 is 7: class ids must be integers in "
        r"\[-1, 3\) \(num_classes=3",
    ),
    "class_below_minus_one": (_set("classes", (0, 1), -2), r"image 0, instance 1 is -2"),
    "y_swapped": (
        _set("boxes", (0, 1), [30.0, 5.0, 10.0, 20.0]),
        r"`targets\['boxes'\]` of image 0, instance 1 is \(y1, x1, y2, x2\) = "
        r"\(30.0, 5.0, 10.0, 20.0\): boxes must be finite .* y1 <= y2 and x1 <= x2",
    ),
    "x_swapped": (_set("boxes", (1, 0), [5.0, 30.0, 20.0, 10.0]), r"image 1, instance 0 is"),
    "nan_box": (_set("boxes", (1, 1), [NAN, 5.0, 10.0, 20.0]), r"= \(nan, 5.0, 10.0, 20.0\)"),
    "inf_box": (_set("boxes", (0, 0), [0.0, 0.0, INF, 9.0]), r"= \(0.0, 0.0, inf, 9.0\)"),
    "nan_mask": (_set("masks", (0, 1, 3, 3), NAN), r"`targets\['masks'\]` of image 0.*nan"),
    "mask_above_one": (_set("masks", (1, 0, 0, 0), 3.0), r"instance 0 holds 3.0: masks must"),
    "fractional_class": (
        lambda t: t.update(classes=t["classes"].astype("float32") + 0.5),
        r"`targets\['classes'\]` must hold integer class ids; received float32 values such as",
    ),
    "nan_mask_box": (
        lambda t: t.update(mask_boxes=np.where(np.arange(4)[None, :, None] == 0, NAN, t["boxes"])),
        r"`targets\['mask_boxes'\]` of image 0, instance 0",
    ),
    "masks_not_square": (
        lambda t: t.update(masks=t["masks"][..., :-1]),
        r"`targets\['masks'\]` must have shape \[b, G, M, M\].*received shape \(2, 4, 8, 7\)",
    ),
    "masks_other_instances": (
        lambda t: t.update(masks=t["masks"][:, :3]),
        r"`targets\['masks'\]` must have shape.*received shape \(2, 3, 8, 8\)",
    ),
    "boxes_xywh_and_score": (
        lambda t: t.update(boxes=np.zeros((2, 4, 5), "float32")),
        r"`targets\['boxes'\]` must have shape \[b, G, 4\]",
    ),
    "missing_masks": (lambda t: t.pop("masks"), r"received targets \['boxes', 'classes'\]"),
    "unknown_key": (lambda t: t.update(scores=t["classes"]), r"unknown keys \['scores'\]"),
}


def _bad(case):
    images, targets = _batch()
    change, pattern = BAD[case]
    change(targets)
    return images, targets, pattern


@pytest.mark.parametrize("case", sorted(BAD))
def test_fit_refuses_a_bad_target_before_the_first_step(case):
    model = _model()
    images, targets, pattern = _bad(case)
    with pytest.raises(ValueError, match=pattern):
        model.fit(images, targets, batch_size=2, verbose=0)
    assert not model.built  # nothing traced, nothing built


@pytest.mark.parametrize("case", ["class_too_large", "nan_box"])
def test_every_way_in_refuses_bad_arrays_and_tensors(model, case):
    images, targets, pattern = _bad(case)
    tensors = {key: keras.ops.convert_to_tensor(value) for key, value in targets.items()}
    _, good = _batch()
    calls = {
        "fit_tensors": lambda: model.fit(images, tensors, batch_size=2, verbose=0),
        "validation_data": lambda: model.fit(
            images, good, batch_size=2, verbose=0, validation_data=(images, targets)
        ),
        "evaluate": lambda: model.evaluate(images, targets, verbose=0),
        "evaluate_positional": lambda: model.evaluate(images, targets, 2, 0),
        "train_on_batch": lambda: model.train_on_batch(images, targets),
        "test_on_batch": lambda: model.test_on_batch(images, targets),
    }
    for name, call in calls.items():
        with pytest.raises(ValueError, match=pattern):
            call()
            pytest.fail(f"{name} accepted the bad targets")


def test_padding_rows_may_hold_anything(model):
    images, targets = _batch()
    targets["boxes"][:, 2] = [NAN, INF, -5.0, -INF]  # rows 2 and 3 are padding (class -1)
    targets["boxes"][:, 3] = [30.0, 30.0, 10.0, 10.0]
    targets["masks"][:, 2:] = NAN
    check_targets(targets, 3)
    history = model.fit(images, targets, batch_size=2, epochs=1, verbose=0).history
    assert history["dropped_targets"] == [0.0]
    assert all(np.isfinite(values[0]) for values in history.values()), history


def _bad_rows_and_as_padding():
    """Targets with 3 bad rows (a class out of range, a NaN box, an inverted box), and the
    same targets with those rows made padding by hand."""
    images, targets = _batch()
    bad = {key: value.copy() for key, value in targets.items()}
    bad["classes"][1, 0] = 7
    bad["boxes"][0, 1, 0] = NAN
    bad["boxes"][1, 1] = bad["boxes"][1, 1, [2, 3, 0, 1]]
    padded = {key: value.copy() for key, value in targets.items()}
    padded["classes"][1, 0] = padded["classes"][0, 1] = padded["classes"][1, 1] = -1
    return images, bad, padded


def test_a_compiled_step_drops_and_counts_bad_rows_as_padding_never_a_nan(model):
    """Fed by a generator (fit cannot look at it before its steps), bad rows cost what padding
    rows cost, step for step (same sampling seed, learning rate 0), and are counted."""
    images, bad, padded = _bad_rows_and_as_padding()
    model.fit(images, padded, batch_size=2, verbose=0)  # built and compiled
    state = keras.ops.convert_to_numpy(model.sampling_seed.state)
    histories = {}
    for name, targets in (("bad", bad), ("padded", padded)):

        def batches(targets=targets):
            while True:
                yield images, targets

        model.sampling_seed.state.assign(state)
        histories[name] = model.fit(batches(), steps_per_epoch=2, verbose=0).history
    assert histories["bad"].pop("dropped_targets") == [6.0]  # 3 rows a step, 2 steps
    assert histories["padded"].pop("dropped_targets") == [0.0]
    assert all(np.isfinite(values[0]) for values in histories["bad"].values()), histories
    for name, values in histories["bad"].items():
        assert values == pytest.approx(histories["padded"][name], rel=1e-5, abs=1e-6), name


def test_one_rule_for_arrays_and_tensors():
    rng = np.random.default_rng(0)
    boxes = rng.uniform(0, 40, (3, 6, 4)).astype("float32")  # a mix of ordered and inverted
    boxes[rng.random((3, 6, 4)) < 0.1] = NAN
    targets = {
        "boxes": boxes,
        "classes": rng.integers(-2, 5, (3, 6)).astype("int32"),
        "masks": rng.uniform(0, 1, (3, 6, 4, 4)).astype("float32"),
    }
    targets["masks"][rng.random((3, 6)) < 0.3, 1, 2] = rng.choice([NAN, -0.1, 1.5])
    on_arrays = target_problems(targets, 3, xp=np)
    tensors = {key: keras.ops.convert_to_tensor(value) for key, value in targets.items()}
    on_tensors = target_problems(tensors, 3)
    for part in ("classes", "boxes", "masks"):
        assert on_arrays[part].any() and not on_arrays[part].all(), part  # the mix covers both
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(on_tensors[part]), on_arrays[part])
