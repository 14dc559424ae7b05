"""MaskRCNN's steps compiled on PyTorch (lambda_keras/backend/compiled_steps.py): the traced
training, evaluation and prediction steps compute what Keras' eager steps compute, given the same
random draws (the RoI and anchor samplers); NMS is one operator of static shape inside the trace;
`detect` pads to the smallest of the transform's few canvases where predict compiles (one graph
per canvas); Inductor compiles each step once without graph breaks (`-m slow`). Run in the
PyTorch child of tests/test_backends.py."""

import warnings

import keras
import numpy as np
import pytest

from lambda_keras.backend import torch_compiled_step
from lambda_keras.backend.compiled_steps import CompiledSteps
from lambda_keras.detection import MaskRCNN, TorchvisionTransform, detect
from tests.backend.test_torch_compiled_step import (
    assert_replayed,
    eager_batch_norms_as_traced,  # noqa: F401 (autouse: bit-for-bit comparisons)
    on_a_gpu_with_cuda_graphs,
    ours,
    use_traced_steps,
)
from tests.detection.tiny import TINY_HEADS, synthetic_batch, tiny_detector, tiny_valid_backbone

on_torch = pytest.mark.backends("torch")


def test_mask_rcnn_is_a_model_with_compiled_steps():
    assert issubclass(MaskRCNN, CompiledSteps)
    model = tiny_detector()
    with pytest.raises(ValueError, match="`kind` must be one of train, test, predict"):
        model.compiled_step_mode("fit")


def on_a_gpu(factor: float) -> float:
    """``factor`` on a GPU, where cuDNN's convolutions round differently from call to call
    (seen on an H100: 1.4e-5 relative in a loss, 3e-4 in a mask's probability), else 1."""
    import torch

    return factor if torch.cuda.is_available() else 1.0


@pytest.fixture
def same_draws(monkeypatch):
    """Keras' eager steps drawing from PyTorch's default generator, as the traced step does (a
    ``SeedGenerator`` on PyTorch builds a generator from a host value, which no graph holds):
    both steps then sample the same anchors and RoIs after the same ``torch.manual_seed``."""
    from keras.src.backend.torch import random

    monkeypatch.setattr(random, "torch_seed_generator", lambda seed: None)


def trained(traced: bool, x, y, inductor: bool = False):
    """A tiny detector after three training steps (the random draws seeded per step), its logs,
    its evaluation and its predictions."""
    import torch

    keras.utils.set_random_seed(1)
    model = tiny_detector()
    model.build(x.shape)  # the initial weights drawn before the steps' draws, in both
    model.compile(keras.optimizers.SGD(0.01, momentum=0.9), jit_compile=traced)
    if traced:
        use_traced_steps(model, x, y, inductor=inductor)
    logs = []
    for step in range(3):
        torch.manual_seed(10 + step)
        logs.append(model.train_on_batch(x, y, return_dict=True))
    torch.manual_seed(3)
    evaluation = model.evaluate(x, y, verbose=0, return_dict=True)
    return model, logs, evaluation, model.predict_on_batch(x)


def assert_same_training(eager, traced, rtol, atol):
    (reference, reference_logs, reference_eval, reference_out) = eager
    (model, logs, evaluation, out) = traced
    for expected, got in zip(reference_logs, logs, strict=True):
        assert expected.keys() == got.keys()
        np.testing.assert_allclose([got[k] for k in got], [expected[k] for k in got], rtol, atol)
    for left, right in zip(reference.variables, model.variables, strict=True):
        np.testing.assert_allclose(
            keras.ops.convert_to_numpy(right), keras.ops.convert_to_numpy(left),
            rtol, atol, err_msg=left.path,
        )
    np.testing.assert_allclose(
        [evaluation[k] for k in reference_eval], list(reference_eval.values()), rtol, atol
    )
    np.testing.assert_array_equal(out["valid"], reference_out["valid"])
    np.testing.assert_array_equal(out["classes"], reference_out["classes"])
    for key in ("boxes", "scores", "masks"):
        np.testing.assert_allclose(out[key], reference_out[key], rtol, atol, err_msg=key)


@on_torch
def test_the_traced_steps_compute_what_keras_eager_steps_compute(same_draws):
    """The eager step trims the RoIs and detections to the counts an image has (a host read);
    the traced step keeps every padded slot, which weighs nothing: the same losses, weights
    within float32 rounding (sums over more, zero, terms)."""
    x, y = synthetic_batch()
    eager, traced = trained(False, x, y), trained(True, x, y)
    assert_same_training(eager, traced, rtol=1e-5 * on_a_gpu(10), atol=1e-6)
    model = traced[0]
    for kind in ("train", "test", "predict"):
        step = getattr(model, f"{kind}_function")
        assert isinstance(step, torch_compiled_step.CompiledStep)
        # Nothing read on the host (NMS's read is inside its operator): CUDA graphs may record.
        assert (step.compiles, step.eager_reason, step.host_reads) == (1, None, 0)


@on_torch
def test_fit_compiles_once_and_the_scripts_callback_says_how_long_it_took():
    from lambda_keras.backend.compile_report import CompileReport

    x, y = synthetic_batch(batch=4)
    keras.utils.set_random_seed(1)
    model = tiny_detector()
    model.compile(keras.optimizers.SGD(0.01))
    use_traced_steps(model, x, y)
    lines = []
    model.fit(x, y, batch_size=2, epochs=2, verbose=0, callbacks=[CompileReport(lines.append)])
    assert len(lines) == 1, lines  # four steps, one graph
    assert lines[0].startswith(f"{model.name}: compiled the train step (graph 1, ")
    assert model.train_function.compile_seconds[0] > 0


@on_torch
def test_nms_is_one_operator_of_static_shape_in_a_trace():
    import torch
    from torch._inductor.utils import is_cudagraph_unsafe_fx_node
    from torch.fx.experimental.proxy_tensor import make_fx

    from lambda_keras.detection import ops

    rng = np.random.default_rng(0)
    corners = rng.uniform(0, 50, (2, 30, 2)).astype("float32")
    boxes = torch.tensor(np.concatenate([corners, corners + 20.0], -1))
    scores = torch.tensor(rng.uniform(size=(2, 30)).astype("float32"))

    def keep(boxes, scores):
        return ops.nms(boxes, scores, 30, iou_threshold=0.3)

    graph = make_fx(keep, tracing_mode="fake")(boxes, scores)
    calls = [n for n in graph.graph.nodes if n.op == "call_function"]
    nms = [n for n in calls if n.target == torch.ops.lambda_keras.padded_nms.default]
    assert len(nms) == 1
    # Inductor's own test of a node that CUDA graphs cannot record (it reads the host): with
    # CUDA graphs, the step's graph is partitioned around it.
    assert is_cudagraph_unsafe_fx_node(nms[0])
    for traced, expected in zip(graph(boxes, scores), keep(boxes, scores), strict=True):
        assert tuple(traced.shape) == (2, 30)
        np.testing.assert_array_equal(traced.cpu().numpy(), expected.cpu().numpy())
    assert 0 < int(graph(boxes, scores)[1].sum()) < 60  # some kept, some suppressed


@on_torch
def test_detect_pads_to_a_few_canvases_where_predict_compiles(monkeypatch):
    """One compiled predict graph per canvas of the transform's few (photos of other sizes that
    fit the same canvas share it), and the detections eager PyTorch finds on its smallest
    canvas."""
    keras.utils.set_random_seed(2)
    heads = {**TINY_HEADS, "max_detections": 5, "score_threshold": 0.0}
    transform = TorchvisionTransform(min_size=64, max_size=200)
    model = MaskRCNN(tiny_valid_backbone(), num_classes=3, transform=transform, **heads)
    monkeypatch.setenv(torch_compiled_step.VARIABLE, "1")
    eager_predict = model.predict_step
    model.predict_function = torch_compiled_step.CompiledStep(
        model, "predict", lambda data: eager_predict(data[0]), inductor=False
    )
    rng = np.random.default_rng(1)
    # Landscape photos on the canvases (64, 128), (64, 128) and (64, 256) (the long sides are
    # 64, 128 and 256 for these sizes), and an upright one on (128, 64).
    shapes = [(60, 100), (60, 110), (60, 180), (100, 60)]
    canvases = [transform.canvas(transform.resized_size(*shape)) for shape in shapes]
    assert canvases == [(64, 128), (64, 128), (64, 256), (128, 64)]
    photos = [rng.integers(0, 256, (*shape, 3), dtype="uint8") for shape in shapes]
    compiled = [detect(model, photo) for photo in photos]  # the model is built by the first
    assert model.predict_function.compiles == 3 and model.predict_function.eager_reason is None
    model.jit_compile, model.predict_function = False, None  # Keras' eager predict
    assert model.compiled_step_mode("predict") is None
    for photo, found in zip(photos, compiled, strict=True):
        expected = detect(model, photo)  # eager: the smallest canvas
        assert int(found["num_detections"]) == int(expected["num_detections"]) > 0
        np.testing.assert_array_equal(found["classes"], expected["classes"])
        for key in ("boxes", "scores"):
            np.testing.assert_allclose(found[key], expected[key], rtol=1e-4, atol=1e-3)
        assert np.mean(found["masks"] != expected["masks"]) < 1e-3


@on_torch
@pytest.mark.torch_compiled
def test_on_a_gpu_detect_and_training_replay_as_cuda_graphs(monkeypatch):
    """Under ``reduce-overhead``: ``detect`` replays one CUDA graph per canvas and finds what
    Keras' eager predict finds; training steps replay theirs with the RoI and anchor samplers
    inside, their losses finite. Skipped without a GPU (benchmarks/torch_gpu.sh)."""
    from torch._dynamo.utils import counters

    on_a_gpu_with_cuda_graphs(monkeypatch)
    keras.utils.set_random_seed(2)
    heads = {**TINY_HEADS, "max_detections": 5, "score_threshold": 0.0}
    transform = TorchvisionTransform(min_size=64, max_size=200)
    model = MaskRCNN(tiny_valid_backbone(), num_classes=3, transform=transform, **heads)
    rng = np.random.default_rng(1)
    photos = [rng.integers(0, 256, (*shape, 3), dtype="uint8") for shape in [(60, 100), (100, 60)]]
    counters.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = [detect(model, photo) for photo in photos * 2]  # each canvas twice: a replay
    warned = ours(caught)
    assert len(warned) == 1 and "new input signature" in warned[0], warned
    assert_replayed(model, ("predict",), compiles=2)  # one graph per canvas
    model.jit_compile, model.predict_function = False, None  # Keras' eager predict
    for photo, got in zip(photos * 2, found, strict=True):
        expected = detect(model, photo)
        assert int(got["num_detections"]) == int(expected["num_detections"]) > 0
        np.testing.assert_allclose(got["boxes"], expected["boxes"], rtol=1e-3, atol=1e-2)
    x, y = synthetic_batch()
    trainee = tiny_detector()
    trainee.compile(keras.optimizers.SGD(0.01, momentum=0.9))
    counters.clear()
    losses = [trainee.train_on_batch(x, y, return_dict=True)["loss"] for _ in range(4)]
    assert_replayed(trainee)
    assert np.isfinite(losses).all(), losses


@on_torch
@pytest.mark.slow  # Inductor compiles a training, an evaluation and a prediction graph: ~100 s
@pytest.mark.torch_compiled
def test_inductor_compiles_each_step_once_without_graph_breaks(same_draws, monkeypatch):
    """Inductor computes in another order than eager PyTorch: the first step's losses agree to
    float32 rounding's effect on them, later steps may sample other RoIs (a proposal's rank
    flips) and drift; the detections of the same weights agree to rounding."""
    import torch
    from torch._dynamo.utils import counters

    # Inductor's own random numbers (Philox) differ from eager PyTorch's by design; with its
    # fallback it draws eager PyTorch's.
    monkeypatch.setattr(torch._inductor.config, "fallback_random", True)
    x, y = synthetic_batch()
    counters.clear()
    model, logs, evaluation, out = trained(True, x, y, inductor=True)
    assert dict(counters["graph_break"]) == {}
    assert counters["stats"]["unique_graphs"] == 3  # train, test, predict: no recompile
    expected = trained(False, x, y)[1][0]
    np.testing.assert_allclose([logs[0][k] for k in expected], list(expected.values()), 1e-2)
    assert all(np.isfinite(list(step.values())).all() for step in [*logs, evaluation])
    model.jit_compile, model.predict_function = False, None  # Keras' eager predict
    reference = model.predict_on_batch(x)
    np.testing.assert_array_equal(out["valid"], reference["valid"])
    for key in ("boxes", "scores", "masks"):
        tolerance = 1e-4 * on_a_gpu(10)
        np.testing.assert_allclose(out[key], reference[key], tolerance, tolerance, err_msg=key)
