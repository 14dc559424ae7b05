"""The layers, the zoo and the detection ops on JAX and PyTorch, from the TensorFlow test run.

Keras picks its backend once per process, so the backend-neutral tests run again in a child
pytest with ``KERAS_BACKEND`` set: by default the NumPy-reference equalities of the lambda layer
(outputs and gradients, every implementation and option, mixed precision, inside ``predict``),
a zoo model and a Mask R-CNN (on a tiny backbone; on a
LambdaResNet under ``-m slow``) trained,
saved and exchanged as ``.keras`` files with this TensorFlow process (the detector's detections,
losses and gradient norm equal to TensorFlow's), bad training targets (refused before ``fit``,
dropped and counted inside its compiled step) and NMS's contract (eager and compiled, non-finite
scores and boxes included);
under ``-m slow`` every layer test, every registered model, the pyramid backbones, the weights
registry and its pretrained entries, the checkpoint reader, the timm converter and every
detection op. timm's weights from the local Hub load in the default child run too;
torchvision's COCO weights, where neither TensorFlow nor PyTorch can be imported, under
``-m slow`` (the TensorFlow run loads them without PyTorch in the default run). PyTorch is not
in the test extra (its PyPI wheel pulls GB of CUDA libraries): its run is skipped unless torch
is installed.
The child cannot import TensorFlow at all, which proves that what it tests needs none.
keras-hub's backbones, classifiers and presets run in a child of their own that may import
TensorFlow (keras-hub's task pipelines run in tf.data).
"""

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest

from tests.backend import FAST_XLA_COMPILE, NO_TENSORFLOW
from tests.detection import test_every_backend as detection_exchange

ROOT = Path(__file__).resolve().parents[1]
LAYER_TESTS = "tests/layers/test_lambda_layer.py::"
CORE = [
    *(
        LAYER_TESTS + name
        for name in (
            "test_matches_naive_reference_on_images",
            "test_matches_naive_reference_on_sequences",
            "test_position_bias_matches_reference",
            "test_gradients_match_the_reference",
            "test_compiled_predict_matches_reference",
            "test_mixed_precision_is_finite_for_large_inputs",
            "test_einsum_in_chunks_of_queries_matches_reference",
        )
    ),
    "tests/layers/test_average_pooling.py",
    "tests/layers/test_lambda_conv.py",  # the strided lambda convolution's pooling
    "tests/layers/test_masking.py::test_masked_positions_cannot_leak_non_finite_values",
    "tests/layers/test_masking.py::test_selection_zeroes_non_finite_values_and_marks_the_queries_"
    "that_see_them",
    # The functions between the detection model's parts (the parts themselves run on every
    # backend in test_every_backend.py; their harness tests are backend-neutral Keras).
    "tests/detection/test_proposals.py",
    "tests/detection/test_detections.py",
    "tests/zoo/test_every_backend.py",
    "tests/detection/test_every_backend.py",
    "tests/detection/test_target_checks.py",
    "tests/detection/ops/test_nms.py",
    "tests/detection/ops/test_roi_align.py::test_adaptive_sampling_matches_torchvision_algorithm",
    "tests/detection/ops/test_roi_align_sparse.py",
    "tests/backend/test_torch_channels_last.py",
    "tests/backend/test_torch_max_pool.py",
    "tests/backend/test_torch_batch_norm.py",
    "tests/layers/test_batch_normalization.py",
    "tests/backend/test_torch_compiled_step.py",
    "tests/backend/test_stateless_steps.py",
    "tests/backend/test_compile_report.py",
    "tests/backend/test_host_initializers.py",
    "tests/test_preprocessing.py",
    # No tensor reaches NumPy implicitly: the library's paths where tensors refuse it (GPUs).
    "tests/test_device_tensors.py",
    "tests/detection/test_detect.py",
    "tests/detection/test_mask_rcnn_compiled.py",
    "tests/detection/test_fpn.py",
    "tests/detection/test_transposed_conv.py",
    # Pretrained weights without TensorFlow: one timm file from the local Hub (a short commit
    # id resolved, checked, converted, cached).
    "tests/zoo/test_pretrained.py::test_each_rule_loads_the_weights_in_one_line_then_from_the_cache"
    "[lambda_resnet26t]",
]
EVERYTHING = [
    "tests/layers",
    "tests/zoo/test_every_backend.py",
    "tests/zoo/test_lambda_resnet.py",
    "tests/zoo/test_convert_timm.py",
    "tests/zoo/test_weights.py",
    "tests/zoo/test_pretrained.py",
    "tests/checkpoints",
    "tests/detection/torchvision/test_coco_weights.py",
    "tests/zoo/test_pyramid_backbone.py",
    "tests/detection/test_every_backend.py",
    "tests/detection/test_mask_rcnn_compiled.py",
    "tests/detection/ops",
]


# keras-hub on each backend, in a child that may import TensorFlow: keras-hub 0.32 runs its
# tasks' preprocessing in tf.data (or Grain) and requires tensorflow-text, so TensorFlow is
# there wherever keras-hub is. The presets' cache and checks are backend-neutral (TensorFlow
# run only): their predictions run on each backend.
HUB = [
    # the converter's resize on the backend against TensorFlow's
    "tests/test_preprocessing.py::test_the_evaluation_crop_on_the_backend_is_tensorflow_s",
    "tests/hub/test_backbones.py",
    "tests/hub/test_image_classifier.py",
    "tests/hub/test_presets.py::test_keras_hub_s_loaders_give_get_model_s_predictions_on_real_"
    "photos",
]

# The child runs with TensorFlow unimportable: the layers, the zoo and these tests need none.
RUN_PYTEST = "import pytest\nsys.exit(pytest.main(sys.argv[1:]))\n"
WITHOUT_TENSORFLOW = NO_TENSORFLOW + RUN_PYTEST


def run_child_pytest(
    backend: str, tests: list[str], exchange: Path, marks: str, tensorflow: bool = False
):
    env = {
        **os.environ,
        "KERAS_BACKEND": backend,
        "LAMBDA_KERAS_EXCHANGE": str(exchange),
        "PYTHONPATH": str(ROOT),
    }
    env.pop("PYTEST_ADDOPTS", None)
    if backend == "jax":  # tiny tensors: XLA's compile time is the cost, not the code it makes
        env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} {FAST_XLA_COMPILE}".strip()
    script = "import sys\n" + RUN_PYTEST if tensorflow else WITHOUT_TENSORFLOW
    command = [sys.executable, "-c", script, *tests, "-n", "0", "-q", "-m", marks]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=3000)


def save_exchange_model(folder: Path, monkeypatch) -> None:
    from tests.detection.test_every_backend import save_detection_exchange
    from tests.zoo.model_harness import images
    from tests.zoo.test_every_backend import exchange_model

    model = exchange_model()
    x = images(batch=3, seed=4)
    model.save(folder / "tensorflow.keras")
    np.savez(folder / "tensorflow.npz", x=x, y=model.predict(x, verbose=0))
    save_detection_exchange(folder, monkeypatch)


def check_returned_models(folder: Path, backend: str) -> None:
    """The models the child saved give its results here, on TensorFlow."""
    from lambda_keras.detection import detect
    from tests.detection.test_every_backend import assert_same_detections, photo

    # Not compiled: a torch-written compile config imports Keras' torch backend (and torch, after
    # TensorFlow, which crashes); the check only predicts.
    loaded = keras.saving.load_model(folder / f"{backend}.keras", compile=False)
    data = np.load(folder / f"{backend}.npz")
    np.testing.assert_allclose(
        loaded.predict(data["x"], verbose=0), data["y"], rtol=1e-4, atol=1e-5
    )
    detector = keras.saving.load_model(folder / f"{backend}_detector.keras", compile=False)
    expected = dict(np.load(folder / f"{backend}_detector.npz"))
    assert_same_detections(detect(detector, photo(), image_size=64), expected)


@pytest.mark.end_to_end
@pytest.mark.parametrize(
    "backend,scope",
    [
        ("jax", "core"),
        pytest.param("torch", "core", marks=pytest.mark.torch),
        pytest.param("jax", "everything", marks=pytest.mark.slow),
        pytest.param("torch", "everything", marks=[pytest.mark.slow, pytest.mark.torch]),
    ],
)
def test_layers_zoo_and_detection_on(backend, scope, tmp_path, monkeypatch):
    if importlib.util.find_spec(backend) is None:
        pytest.skip(f"{backend} is not installed")
    # The detector on a LambdaResNet under -m slow, on the tiny backbone by default (both sides).
    backbone = "tiny" if scope == "core" else "lambda_resnet"
    monkeypatch.setenv("LAMBDA_KERAS_EXCHANGE_BACKBONE", backbone)
    monkeypatch.setattr(detection_exchange, "BACKBONE", backbone)
    save_exchange_model(tmp_path, monkeypatch)
    tests, marks = (CORE, "not slow") if scope == "core" else (EVERYTHING, "slow or not slow")
    result = run_child_pytest(backend, tests, tmp_path, marks)
    summary = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    assert re.search(r"\d+ passed", summary) and "failed" not in summary, summary
    # Every exchange test ran (not skipped) on the child's backend.
    assert (tmp_path / f"{backend}.keras").exists(), summary
    assert (tmp_path / f"{backend}_detector.keras").exists(), summary
    check_returned_models(tmp_path, backend)


@pytest.mark.end_to_end
@pytest.mark.parametrize("backend", ["jax", pytest.param("torch", marks=pytest.mark.torch)])
def test_keras_hub_on(backend, tmp_path):
    """keras-hub's backbones, classifiers, image converters, presets and RetinaNet on JAX and
    PyTorch (HUB), TensorFlow importable."""
    if importlib.util.find_spec(backend) is None or importlib.util.find_spec("keras_hub") is None:
        pytest.skip(f"{backend} or keras_hub is not installed")
    result = run_child_pytest(backend, HUB, tmp_path, "not slow", tensorflow=True)
    summary = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    assert re.search(r"\d+ passed", summary) and not re.search("failed|skipped", summary), summary
