"""Bad arguments of the detection API: a ValueError/TypeError naming the argument and the value
or shape received, raised before a graph is built (never a TensorFlow error from a slice or a
matmul, never Keras' dump of the call's inputs)."""

import re

import keras
import numpy as np
import pytest

from lambda_keras.detection import MaskRCNN, WarmupStepDecay, ops
from lambda_keras.detection.serving import (
    export_detector,
    export_detector_keras_file,
    export_detector_litert,
    export_detector_onnx,
)
from lambda_keras.training.detection import DetectionConfig, prepare_data
from lambda_keras.training.distribute import PlacementConfig
from tests.detection.tiny import tiny_backbone


def z(*shape):
    return np.zeros(shape, "float32")


OP_CASES = {
    "iou_rank_1": (
        lambda: ops.box_iou(z(3), z(2, 4)),
        r"`boxes1` must have shape \[\.\.\., 4\].*\(3,\)",
    ),
    "iou_three_coordinates": (lambda: ops.box_iou(z(2, 4), z(2, 3)), r"`boxes2`.*\(2, 3\)"),
    "area": (lambda: ops.box_area(z(5, 2)), r"`boxes`.*\(5, 2\)"),
    "encode_not_broadcastable": (
        lambda: ops.encode_boxes(z(3, 4), z(2, 4)),
        r"`boxes` and `anchors` must have broadcastable.*\(3, 4\) and \(2, 4\)",
    ),
    "decode_deltas": (lambda: ops.decode_boxes(z(3, 5), z(3, 4)), r"`deltas`.*\(dy, dx, dh, dw\)"),
    "clip": (lambda: ops.clip_boxes(z(2, 2), (8, 8)), r"`boxes`.*\(2, 2\)"),
    "from_coco": (lambda: ops.from_coco(z(2, 3)), r"\(x, y, w, h\).*\(2, 3\)"),
    "levels": (lambda: ops.assign_pyramid_levels(z(2, 3), 2, 5), r"`boxes`.*\(2, 3\)"),
    "roi_align_features_rank": (
        lambda: ops.roi_align(z(8, 8, 4), z(1, 2, 4)),
        r"`features` must have shape \[batch, height, width, channels\]; received.*\(8, 8, 4\)",
    ),
    "roi_align_boxes_rank": (
        lambda: ops.roi_align(z(1, 8, 8, 4), z(2, 4)),
        r"`boxes` must have shape \[batch, num_boxes, 4\]; received shape \(2, 4\)",
    ),
    "roi_align_batches": (
        lambda: ops.roi_align(z(2, 8, 8, 4), z(3, 5, 4)),
        r"`features` and `boxes` must agree.*\(2, 8, 8, 4\) and \(3, 5, 4\)",
    ),
    "roi_align_scale_zero": (
        lambda: ops.roi_align(z(1, 8, 8, 4), z(1, 2, 4), spatial_scale=0),
        "`spatial_scale` must be a positive number; received spatial_scale=0",
    ),
    "multilevel_level_rank": (
        lambda: ops.multilevel_roi_align({"P2": z(1, 8, 8, 4), "P3": z(4, 4, 4)}, z(1, 2, 4)),
        r"`features\['P3'\]` must have shape",
    ),
    "multilevel_boxes": (
        lambda: ops.multilevel_roi_align({"P2": z(1, 8, 8, 4)}, z(1, 2, 2)),
        r"`boxes` must have shape \[batch, num_boxes, 4\]",
    ),
    "nms_scores": (
        lambda: ops.nms(z(5, 4), z(4), 3),
        r"`boxes` and `scores` must agree.*\(5, 4\) and \(4,\)",
    ),
    "nms_scores_rank": (
        lambda: ops.nms(z(5, 4), z(5, 1), 3),
        r"`scores` must have shape \[\.\.\., n\]",
    ),
    "batched_nms_classes": (
        lambda: ops.batched_nms(z(5, 4), z(5), np.zeros(6, "int32"), 3),
        r"`boxes` and `classes` must agree.*\(6,\)",
    ),
    "paste_counts": (
        lambda: ops.paste_masks(z(2, 28, 28), z(3, 4), (32, 32)),
        r"`masks` and `boxes` must agree.*\(2, 28, 28\) and \(3, 4\)",
    ),
    "paste_masks_rank": (
        lambda: ops.paste_masks(z(28, 28), z(1, 4), (32, 32)),
        r"`masks` must have shape \[n, M, M\]; received shape \(28, 28\)",
    ),
    "paste_on_host_counts": (
        lambda: ops.paste_masks_on_host(z(2, 28, 28), z(3, 4), (32, 32)),
        r"`masks` and `boxes` must agree.*\(2, 28, 28\) and \(3, 4\)",
    ),
    "paste_torchvision_on_host_boxes": (
        lambda: ops.paste_masks_torchvision_on_host(z(1, 28, 28), z(1, 5), (32, 32)),
        r"`boxes` must have shape \[n, 4\]; received shape \(1, 5\)",
    ),
    "paste_on_host_image_shape": (
        lambda: ops.paste_masks_on_host(z(1, 28, 28), z(1, 4), (32, 0)),
        r"image_shape\[1\]",
    ),
    "paste_on_host_keep": (
        lambda: ops.paste_masks_on_host(z(2, 28, 28), z(2, 4), (32, 32), keep=[True]),
        r"`keep` and `boxes` must agree.*\(1,\) and \(2, 4\)",
    ),
    "paste_on_host_threshold": (
        lambda: ops.paste_masks_on_host(z(1, 28, 28), z(1, 4), (32, 32), threshold=0.0),
        r"`threshold` must be a positive number",
    ),
    "crop_indices": (
        lambda: ops.crop_masks(z(1, 2, 16, 16), z(1, 3, 4), np.zeros((1, 2), "int32")),
        r"`boxes` and `mask_indices` must agree.*\(1, 3, 4\) and \(1, 2\)",
    ),
}


@pytest.mark.parametrize("case", list(OP_CASES))
def test_ops_name_the_argument_and_its_shape(case):
    call, message = OP_CASES[case]
    with pytest.raises(ValueError, match=message):
        call()


def _classifier_backbone():
    images = keras.Input((64, 64, 3))
    return keras.Model(images, keras.layers.Conv2D(4, 3, strides=32)(images), name="plain")


def test_backbone_without_a_pyramid_is_refused_when_built():
    with pytest.raises(ValueError, match=r"'plain' outputs one tensor, missing \['P2'"):
        MaskRCNN(_classifier_backbone(), num_classes=3)


def test_a_backbone_with_a_list_of_outputs_is_named_so():
    images = keras.Input((64, 64, 3))
    maps = [keras.layers.Conv2D(4, 3, strides=s, padding="same")(images) for s in (4, 8)]
    backbone = keras.Model(images, maps, name="two")
    with pytest.raises(ValueError, match=r"'two' outputs a list of 2 tensors, missing \['P2'"):
        MaskRCNN(backbone, num_classes=3)


def test_a_sequential_backbone_is_refused():
    """A Sequential model outputs one tensor, never the pyramid's dict (it was taken: its
    ``output`` is unknown before it is called)."""
    backbone = keras.Sequential([keras.Input((8,)), keras.layers.Dense(2)], name="plain")
    with pytest.raises(ValueError, match=r"'plain' outputs one tensor, missing \['P2'"):
        MaskRCNN(backbone, num_classes=3)


@pytest.mark.parametrize(
    "name, value, error, allowed",
    [
        ("rpn_convs", 0, ValueError, "a positive integer"),
        ("box_head_convs", -1, ValueError, "an integer >= 0"),
        ("box_head_fcs", 0, ValueError, "a positive integer"),
        ("fpn_batch_norm", "no", TypeError, "True or False"),
        ("head_batch_norm", 1, TypeError, "True or False"),
    ],
)
def test_mask_rcnn_names_the_options_of_its_parts(name, value, error, allowed):
    """The heads' and the FPN's options are refused under MaskRCNN's names (the parts' own
    checks named num_convs, num_fcs or batch_norm)."""
    message = f"`{name}` must be {allowed}; received {name}={value!r}"
    with pytest.raises(error, match=re.escape(message)):
        MaskRCNN(tiny_backbone(), num_classes=1, **{name: value})


CATEGORY_FORM = (
    r"`categories` must be a list of one \{'id': int >= 0, 'name': str\} per class \(1\)"
)


@pytest.mark.parametrize(
    "categories, error, received",
    [
        ("abc", TypeError, "received 'abc'"),
        (5, TypeError, "received 5."),
        ([], ValueError, "received 0 entries"),
        ([None], ValueError, "received categories[0]=None"),
        ([{"id": True, "name": "a"}], ValueError, "received categories[0]={'id': True"),
        ([{"id": 1.5, "name": "a"}], ValueError, "received categories[0]={'id': 1.5"),
        ([{"id": -1, "name": "a"}], ValueError, "received categories[0]={'id': -1"),
        ([{"id": 1, "name": 2}], ValueError, "received categories[0]={'id': 1, 'name': 2}"),
    ],
)
def test_categories_are_checked_entry_by_entry(categories, error, received):
    """A bool id was taken as an int, a string or a number failed inside ``dict()``."""
    with pytest.raises(error, match=CATEGORY_FORM + ".*" + re.escape(received)):
        MaskRCNN(tiny_backbone(), num_classes=1, categories=categories)


def test_two_classes_with_one_category_id_are_refused():
    categories = [{"id": 1, "name": "a"}, {"id": np.int64(1), "name": "b"}]
    message = "`categories` must give each class its own id; received the ids [1, 1]."
    with pytest.raises(ValueError, match=re.escape(message)):
        MaskRCNN(tiny_backbone(), num_classes=2, categories=categories)


def test_categories_take_numpy_ids_as_ints():
    categories = [{"id": np.int64(3), "name": "a"}, {"id": 7, "name": "b"}]
    model = MaskRCNN(tiny_backbone(), num_classes=2, categories=categories)
    assert model.categories == [{"id": 3, "name": "a"}, {"id": 7, "name": "b"}]
    assert all(type(c["id"]) is int for c in model.categories)


@pytest.mark.parametrize(
    "shape, message",
    [
        ((64, 64, 3), r"\[batch, height, width, 3\]; received images of shape \(64, 64, 3\)"),
        ((1, 64, 64, 1), r"received images of shape \(1, 64, 64, 1\)"),
        ((1, 64, 64, 4), r"RGB images .*\(1, 64, 64, 4\)"),
        ((1, 96, 64, 3), r"multiples of 64 .*\(1, 96, 64, 3\)"),
        ((1, 0, 64, 3), r"positive multiples of 64 .*\(1, 0, 64, 3\)"),
        ((0, 64, 64, 3), r"at least one image in the batch; received images of shape \(0, 64"),
    ],
)
def test_images_are_checked_before_keras_traces_the_call(shape, message):
    model = MaskRCNN(tiny_backbone(), num_classes=3, fpn_channels=8, box_head_units=8)
    with pytest.raises(ValueError, match=message) as info:
        model(z(*shape))
    assert "Arguments received" not in str(info.value)


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"image_size": 100}, ValueError, "`image_size` must be a multiple of 64.*100"),
        ({"image_size": 0}, ValueError, "`image_size` must be a positive integer"),
        ({"image_size": 128.0}, ValueError, "`image_size` must be a positive integer"),
        ({"model": "model.keras"}, TypeError, "`model` must be a MaskRCNN; received str"),
        ({"path": None}, TypeError, "`path` must be a directory path; received None"),
        ({}, ValueError, "`model` must be built before it is exported.*unbuilt MaskRCNN"),
    ],
)
def test_export_detector_arguments(tmp_path, kwargs, error, message):
    """Refused in this process on every backend (on JAX and PyTorch before the ``.keras`` file
    and the TensorFlow child that exports it); the model is never built."""
    arguments = {"model": MaskRCNN(tiny_backbone(), num_classes=3), "path": str(tmp_path / "sm")}
    with pytest.raises(error, match=message):
        export_detector(**{"image_size": 128, **arguments, **kwargs})
    assert not (tmp_path / "sm").exists()


@pytest.mark.parametrize(
    "export, name", [(export_detector_litert, "detector.tflite"), (export_detector_onnx, "d.onnx")]
)
@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"path": None}, TypeError, "`path` must be a file path; received None"),
        ({"image_size": 100}, ValueError, "`image_size` must be a multiple of 64.*100"),
        ({}, ValueError, "`model` must be built before it is exported.*unbuilt MaskRCNN"),
    ],
)
def test_file_exports_name_their_arguments(tmp_path, export, name, kwargs, error, message):
    """The LiteRT and ONNX exports refuse the same arguments first, on every backend."""
    arguments = {"model": MaskRCNN(tiny_backbone(), num_classes=3), "path": str(tmp_path / name)}
    with pytest.raises(error, match=message):
        export(**{"image_size": 128, **arguments, **kwargs})
    assert not (tmp_path / name).exists()


def test_export_detector_keras_file_checks_the_size_before_reading(tmp_path):
    # On JAX and PyTorch before the TensorFlow child starts (the file is never opened).
    with pytest.raises(ValueError, match="`image_size` must be a multiple of 64.*100"):
        export_detector_keras_file(str(tmp_path / "missing.keras"), str(tmp_path / "sm"), 100)
    assert not (tmp_path / "sm").exists()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"peak": float("nan")}, "`peak` must be a positive number; received peak=nan"),
        ({"peak": -0.1}, "`peak` must be a positive number"),
        ({"warmup_steps": -5}, "`warmup_steps` must be an integer >= 0; received warmup_steps=-5"),
        ({"warmup_steps": 2.5}, "`warmup_steps` must be an integer"),
        ({"total_steps": 0}, "`total_steps` must be a positive integer"),
        ({"boundaries": (0.9, 1.5)}, r"`boundaries` must be a number in \(0.0, 1.0\]"),
        ({"boundaries": (0.95, 0.9)}, "`boundaries` must be increasing"),
    ],
)
def test_schedule_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        WarmupStepDecay(**{"peak": 0.1, "warmup_steps": 10, "total_steps": 100, **kwargs})


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (
            {"placement": PlacementConfig("multi_worker")},
            "--strategy=multi_worker: Mask R-CNN trains with model.fit",
        ),
        ({"backbone_weights": "/no/such.weights.h5"}, "'/no/such.weights.h5' does not exist"),
        ({"backbone_weights": "imagenet"}, "Unknown weights 'imagenet'.*'lambda_resnet50': none"),
        ({"backbone": "resnet"}, "`backbone` must be one of 'lambda_resnet'"),
    ],
)
def test_run_settings_that_would_fail_later_fail_before_the_data_is_read(tmp_path, kwargs, message):
    with pytest.raises(ValueError, match=message):  # the config's own checks, or the run's
        config = DetectionConfig(
            shapes_dir=str(tmp_path / "data"), model_dir=str(tmp_path), **kwargs
        )
        prepare_data(config)
    assert not (tmp_path / "data").exists()  # nothing written


@pytest.mark.parametrize(
    "sizes, message",
    [
        ([[64, 64]], r"one \(height, width\) row per image: 2 images; received 1 rows"),
        ([[-5, 0], [64, 64]], r"at least 1 pixel; received \[\[-5, 0\], \[64, 64\]\]"),
        (np.array([[64, 0], [64, 64]], "int32"), r"at least 1 pixel; received \[\[64, 0\]"),
    ],
)
def test_image_sizes_are_one_positive_row_per_image(sizes, message):
    """A size row per image, each side at least 1: a missing row was taken from the other
    image, a size of 0 left an image no pixels (no detections, no error)."""
    model = MaskRCNN(tiny_backbone(), num_classes=3, fpn_channels=8, box_head_units=8)
    with pytest.raises(ValueError, match=message):
        model({"images": z(2, 64, 64, 3), "image_sizes": sizes})


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("as_dict", [False, True])
def test_images_with_a_non_finite_value_are_refused(value, as_dict):
    """One NaN pixel in a NumPy batch spread through the backbone and emptied its image's
    detections, with no error; now it is refused, naming where."""
    model = MaskRCNN(tiny_backbone(), num_classes=3, fpn_channels=8, box_head_units=8)
    images = z(2, 64, 64, 3)
    images[1, 10, 20, 2] = value
    inputs = {"images": images, "image_sizes": [[64, 64], [64, 64]]} if as_dict else images
    message = (
        "`images` must hold finite values; received images of shape (2, 64, 64, 3) with 1 NaN "
        "or infinite values, the first at (1, 10, 20, 2)."
    )
    with pytest.raises(ValueError, match=re.escape(message)):
        model(inputs)
