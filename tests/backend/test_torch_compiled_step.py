"""The zoo's steps compiled on PyTorch (lambda_keras/backend/torch_compiled_step.py,
lambda_keras/backend/compiled_steps.py): the traced step computes exactly what Keras' eager step
computes (losses, logs, weights, the optimizer's and the metrics' variables, mixed precision
included), Inductor's within float tolerance with one graph and no recompile, random layers
draw anew each step, a step that reads a tensor on the host runs eagerly after one warning, bad
data raises Keras' error, and the switches. The PyTorch tests run in the PyTorch child of
tests/test_backends.py; the setting's parsing and the model class run everywhere."""

import re
import warnings

import keras
import numpy as np
import pytest

from lambda_keras import zoo
from lambda_keras.backend import stateless_steps, torch_compiled_step
from lambda_keras.backend.compiled_steps import CompiledSteps
from lambda_keras.layers import LambdaLayer, StochasticDepth

on_torch = pytest.mark.backends("torch")


@pytest.fixture(autouse=True)
def eager_batch_norms_as_traced(monkeypatch):
    """Eager batch norms on the traced steps' rule (``EAGER_EVERY_MAP`` off), so that a traced
    step run as it is computes Keras' eager step bit for bit: by default an eager map takes
    PyTorch's kernels at any size, a traced one only from ``MIN_VALUES`` on."""
    if keras.backend.backend() == "torch":
        from lambda_keras.backend import torch_batch_norm

        monkeypatch.setattr(torch_batch_norm, "EAGER_EVERY_MAP", False)


@pytest.mark.parametrize(
    "value, device, expected",
    [
        (None, "cuda:0", "default"),  # auto: compiled on a GPU
        (None, "cpu", None),  # auto: Keras' eager steps on a CPU
        ("auto", "cuda", "default"),
        ("1", "cpu", "default"),
        ("0", "cuda", None),
        ("off", "cpu", None),
        ("max-autotune", "cpu", "max-autotune"),
    ],
)
def test_the_setting_picks_a_mode_per_device(value, device, expected):
    environ = {} if value is None else {torch_compiled_step.VARIABLE: value}
    assert torch_compiled_step.compile_mode(environ, device) == expected
    # A model's jit_compile=True: auto compiles on a CPU too; an explicit setting holds.
    asked = "default" if value in (None, "auto") else expected
    assert torch_compiled_step.compile_mode(environ, device, jit_compile=True) == asked


def test_a_bad_setting_names_the_variable_and_the_choices():
    expected = r"LAMBDA_KERAS_TORCH_COMPILE='fast': expected auto .*reduce-overhead"
    with pytest.raises(ValueError, match=expected):
        torch_compiled_step.compile_mode({torch_compiled_step.VARIABLE: "fast"}, "cpu")


def test_zoo_models_are_zoo_models_after_saving(tmp_path):
    model = zoo.LambdaResNet26T(weights=None, input_shape=(32, 32, 3), classes=3)
    assert isinstance(model, zoo.ZooModel) and isinstance(model, keras.Model)
    model.save(tmp_path / "m.keras")
    loaded = keras.saving.load_model(tmp_path / "m.keras")
    assert type(loaded) is zoo.ZooModel
    x = np.random.default_rng(0).normal(size=(2, 32, 32, 3)).astype("float32")
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0), 1e-6)


class Net(CompiledSteps, keras.Model):
    pass


def small_net(rate: float = 0.0, lambda_layer: bool = True) -> keras.Model:
    """Convolution, batch norm, a lambda layer, dropout and stochastic depth: 16 x 16 images."""
    keras.utils.set_random_seed(3)
    inputs = keras.Input((16, 16, 3))
    x = keras.layers.Conv2D(8, 3, padding="same")(inputs)
    x = keras.layers.BatchNormalization()(x)
    x = keras.layers.ReLU()(x)
    if lambda_layer:
        y = LambdaLayer(8, key_dim=4, num_heads=2, scope_size=5, intra_depth=1)(x)
        x = x + StochasticDepth(rate)(y)
    x = keras.layers.GlobalAveragePooling2D()(x)
    x = keras.layers.Dropout(rate)(x)
    return Net(inputs, keras.layers.Dense(4)(x))


def batch(size=4, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(size, 16, 16, 3)).astype("float32"), rng.integers(0, 4, size)


def compiled(model, optimizer=None, **options):
    model.compile(
        optimizer or keras.optimizers.SGD(0.05, momentum=0.9),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
        **options,
    )
    return model


def use_traced_steps(model, x, y, inductor=False):
    """The model's step functions as CompiledSteps (traced graphs run as they are unless
    ``inductor``)."""
    model._symbolic_build(data_batch=(x, y, None))
    eager = {"train": model.train_step, "test": model.test_step, "predict": model.predict_step}
    for kind in ("train", "test", "predict"):
        step = torch_compiled_step.CompiledStep(
            model, kind, lambda data, k=kind: eager[k](data[0]), inductor=inductor
        )
        setattr(model, f"{kind}_function", step)


def exactly() -> dict:
    """Bit for bit on a CPU; on a GPU within float32 rounding (cuDNN picks its algorithms per
    call, and they sum in different orders: seen on an H100, 1e-5 relative)."""
    import torch

    return {"rtol": 1e-4, "atol": 1e-6} if torch.cuda.is_available() else {"rtol": 0, "atol": 0}


def ours(caught) -> list[str]:
    """The project's warnings among ``caught`` (``warnings.catch_warnings(record=True)``)."""
    return [str(w.message) for w in caught if str(w.message).startswith("lambda_keras")]


def assert_same_variables(a, b, **tolerance):
    for left, right in zip(a.variables, b.variables, strict=True):
        np.testing.assert_allclose(
            keras.ops.convert_to_numpy(left), keras.ops.convert_to_numpy(right),
            err_msg=left.path, **tolerance,
        )
    optimizers = (a.optimizer.variables, b.optimizer.variables)
    for left, right in zip(*optimizers, strict=True):
        np.testing.assert_allclose(
            keras.ops.convert_to_numpy(left), keras.ops.convert_to_numpy(right),
            err_msg=left.path, **tolerance,
        )


def lambda_resnet() -> keras.Model:
    """A LambdaResNet-50 with every implementation of the lambda layer, without random layers
    (their draws differ by design: PyTorch's generator in the traced step)."""
    keras.utils.set_random_seed(5)
    return zoo.LambdaResNet50(
        width_multiplier=0.125, input_shape=(32, 32, 3), classes=4, weights=None,
        dropout_rate=0.0, stochastic_depth_rate=0.0,
    )


def three_steps(model, x, y):
    return [model.train_on_batch(x, y, return_dict=True) for _ in range(3)]


@on_torch
@pytest.mark.parametrize(
    "policy, optimizer",
    [
        ("float32", lambda: keras.optimizers.SGD(0.05, momentum=0.9)),
        ("float32", lambda: keras.optimizers.AdamW(1e-3)),
        ("mixed_bfloat16", lambda: keras.optimizers.SGD(0.05, momentum=0.9)),
        ("mixed_float16", lambda: keras.optimizers.SGD(0.05, momentum=0.9)),  # loss scaling
    ],
)
def test_the_traced_steps_compute_what_keras_eager_steps_compute(policy, optimizer):
    keras.config.set_dtype_policy(policy)
    x, y = batch()
    eager = compiled(lambda_resnet(), optimizer(), jit_compile=False)
    traced = compiled(lambda_resnet(), optimizer())
    x = np.random.default_rng(1).normal(size=(4, 32, 32, 3)).astype("float32")
    use_traced_steps(traced, x, y)
    assert three_steps(eager, x, y) == three_steps(traced, x, y)
    assert traced.train_function.compiles == 1 and traced.train_function.eager_reason is None
    assert_same_variables(eager, traced, **exactly())
    assert eager.evaluate(x, y, verbose=0) == traced.evaluate(x, y, verbose=0)
    np.testing.assert_array_equal(eager.predict(x, verbose=0), traced.predict(x, verbose=0))
    assert traced.predict_function.compiles == 1


@on_torch
def test_mixed_float16_skips_a_step_whose_gradients_are_not_finite():
    keras.config.set_dtype_policy("mixed_float16")
    x, y = batch()
    eager, traced = compiled(small_net(), jit_compile=False), compiled(small_net())
    use_traced_steps(traced, x, y)
    huge = np.full_like(x, 6e4)  # float16 overflows: Keras halves the scale, keeps the weights
    for model in (eager, traced):
        model.train_on_batch(x, y)
        model.train_on_batch(huge, y)
        model.train_on_batch(x, y)
    scale = traced.optimizer.dynamic_scale
    assert float(keras.ops.convert_to_numpy(scale)) < 32768.0  # the non-finite step lowered it
    assert_same_variables(eager, traced, **exactly())


@on_torch
@pytest.mark.torch_compiled
def test_inductor_compiles_each_step_once_without_graph_breaks():
    from torch._dynamo.utils import counters

    x, y = batch()
    eager = compiled(small_net(), jit_compile=False)
    model = compiled(small_net())  # the default: jit_compile="auto"
    counters.clear()
    losses = [model.train_on_batch(x, y, return_dict=True)["loss"] for _ in range(4)]
    assert isinstance(model.train_function, torch_compiled_step.CompiledStep)
    assert model.train_function.mode == "default"  # LAMBDA_KERAS_TORCH_COMPILE=1
    assert dict(counters["graph_break"]) == {}
    assert counters["stats"]["unique_graphs"] == 1  # one graph, no recompile after step one
    expected = [eager.train_on_batch(x, y, return_dict=True)["loss"] for _ in range(4)]
    np.testing.assert_allclose(losses, expected, rtol=1e-4)
    assert_same_variables(eager, model, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(
        model.predict(x, verbose=0), eager.predict(x, verbose=0), rtol=1e-4, atol=1e-5
    )
    assert counters["stats"]["unique_graphs"] == 2 and dict(counters["graph_break"]) == {}
    assert len(model.train_function.compile_seconds) == 1


@on_torch
@pytest.mark.torch_compiled
@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
def test_inductor_compiles_a_mixed_precision_step_once_with_keras_losses(policy):
    """Mixed precision under Inductor (float16 with its loss scaling): one graph per step,
    none broken, Keras' eager losses and predictions within half-precision rounding."""
    from torch._dynamo.utils import counters

    keras.config.set_dtype_policy(policy)
    x, y = batch()
    eager = compiled(small_net(), jit_compile=False)
    model = compiled(small_net())
    counters.clear()
    losses = [model.train_on_batch(x, y) for _ in range(3)]
    assert dict(counters["graph_break"]) == {} and counters["stats"]["unique_graphs"] == 1
    assert model.train_function.eager_reason is None
    np.testing.assert_allclose(losses, [eager.train_on_batch(x, y) for _ in range(3)], rtol=2e-2)
    predictions, expected = (m.predict(x, verbose=0) for m in (model, eager))
    assert predictions.dtype == expected.dtype and np.isfinite(predictions).all()
    np.testing.assert_allclose(predictions, expected, rtol=5e-2, atol=5e-2)
    assert counters["stats"]["unique_graphs"] == 2


@on_torch
@pytest.mark.torch_compiled
def test_a_batch_in_another_memory_order_runs_the_same_graph():
    """A batch whose arrays are views in another memory order (same shapes): no new graph,
    the same loss as the contiguous batch's."""
    from torch._dynamo.utils import counters

    x, y = batch()
    transposed = np.ascontiguousarray(x.transpose(0, 3, 2, 1)).transpose(0, 3, 2, 1)
    assert transposed.shape == x.shape and not transposed.flags.c_contiguous
    model = compiled(small_net())
    counters.clear()
    losses = [model.test_on_batch(data, y) for data in (x, transposed, x)]
    assert counters["stats"]["unique_graphs"] == 1 and dict(counters["graph_break"]) == {}
    assert len(model.test_function.compile_seconds) == 1
    np.testing.assert_allclose(losses[1:], [losses[0]] * 2, rtol=1e-6)


def residual_net() -> keras.Model:
    """A residual block on ``[batch, height, width, channels]`` tensors: convolutions, batch
    norm, silu and an addition, as in the zoo's blocks."""
    keras.utils.set_random_seed(0)
    inputs = keras.Input((16, 16, 16))
    x = keras.layers.Conv2D(16, 1)(inputs)
    x = keras.layers.Activation("silu")(keras.layers.BatchNormalization()(x))
    x = keras.layers.BatchNormalization()(keras.layers.Conv2D(16, 3, padding="same")(x))
    x = keras.layers.Activation("silu")(x + inputs)
    return Net(inputs, keras.layers.Dense(4)(keras.layers.GlobalAveragePooling2D()(x)))


def transposes(model, x, y) -> list[int]:
    """How many blocks each of the prediction and the training step's Inductor code transposes
    (``transpose_mxn``, the C++ kernels' copy from one memory order to another)."""
    import torch
    from torch._inductor.utils import run_and_get_code

    counts = []
    with torch._inductor.config.patch(fx_graph_cache=False):  # the code is generated anew
        for call, args in ((model.predict_on_batch, (x,)), (model.train_on_batch, (x, y))):
            _, codes = run_and_get_code(call, *args)
            assert codes, "Inductor generated no code"
            counts.append(sum(code.count("transpose_mxn") for code in codes))
    return counts


@on_torch
@pytest.mark.torch_compiled
def test_inductor_keeps_keras_tensors_in_their_memory_order(monkeypatch):
    """Inductor's layout optimization took Keras' [batch, height, width, channels] tensors for
    [batch, channels, height, width] and stored them as [batch, width, channels, height],
    transposing them between kernels (twice the time of a LambdaResNet-50's prediction on 2
    CPU cores): the compiled steps turn it off (INDUCTOR_OPTIONS)."""
    import torch
    from torch._inductor.cpu_vec_isa import pick_vec_isa

    if torch.cuda.is_available() or not pick_vec_isa():
        pytest.skip("counts the transposes of Inductor's vectorized C++ code for CPUs")
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(4, 16, 16, 16)).astype("float32"), np.arange(4) % 4
    assert torch_compiled_step.INDUCTOR_OPTIONS == {"layout_optimization": False}
    assert transposes(compiled(residual_net()), x, y) == [0, 0]
    # The check can fail: with Inductor's own layouts the same steps transpose.
    monkeypatch.setattr(torch_compiled_step, "INDUCTOR_OPTIONS", {})
    assert min(transposes(compiled(residual_net()), x, y)) > 0


@on_torch
@pytest.mark.parametrize("mode", torch_compiled_step.MODES)
def test_a_step_compiles_with_its_mode_s_options_and_the_project_s(mode, monkeypatch):
    import torch
    from torch._inductor import list_mode_options

    expected = {**list_mode_options(mode, dynamic=False), "layout_optimization": False}
    assert torch_compiled_step.inductor_options(mode) == expected
    calls = []

    def record(graph, **arguments):  # the traced graph runs as it is
        calls.append(arguments)
        return graph

    monkeypatch.setattr(torch, "compile", record)
    model, step, x, _ = traced_in_mode(mode, kind="predict")
    step.inductor = True
    model.predict_on_batch(x)
    assert calls == [{"fullgraph": True, "dynamic": False, "options": expected}]


@on_torch
@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_a_step_compiled_for_a_cpu_keeps_glibc_s_buffers_in_its_heap(device, monkeypatch):
    """On a CPU each compile asks glibc_heap (which sets glibc's thresholds once per process) and
    the step says what it answered; a step on a GPU and the traced graph run without Inductor
    (``inductor=False``) do not ask."""
    import torch

    from lambda_keras.backend import glibc_heap

    calls = []

    def keep_buffers_in_heap():
        calls.append(device)
        return True

    monkeypatch.setattr(glibc_heap, "keep_buffers_in_heap", keep_buffers_in_heap)
    monkeypatch.setattr(torch, "compile", lambda graph, **arguments: graph)
    on_cuda = device == "cuda"
    model, step, x, _ = traced_in_mode("default", monkeypatch if on_cuda else None, kind="predict")
    monkeypatch.setattr(torch_compiled_step, "_on_cpu", lambda tensors: not on_cuda)
    model.predict_on_batch(x)
    assert calls == [] and not step.glibc_heap  # inductor=False
    step.inductor, step._graphs = True, {}
    model.predict_on_batch(x)
    model.predict_on_batch(x)  # compiled already
    assert calls == ([] if on_cuda else ["cpu"])
    assert step.glibc_heap is not on_cuda


@on_torch
def test_a_bad_glibc_switch_raises_instead_of_running_eagerly(monkeypatch):
    import torch

    monkeypatch.setenv("LAMBDA_KERAS_GLIBC_HEAP", "maybe")
    monkeypatch.setattr(torch, "compile", lambda graph, **arguments: graph)
    model, step, x, _ = traced_in_mode("default", kind="predict")
    monkeypatch.setattr(torch_compiled_step, "_on_cpu", lambda tensors: True)  # on a GPU too
    step.inductor = True
    with pytest.raises(ValueError, match="LAMBDA_KERAS_GLIBC_HEAP='maybe'"):
        model.predict_on_batch(x)
    assert step.eager_reason is None and step.compiles == 0


@on_torch
def test_random_layers_draw_anew_each_step_and_repeat_under_the_same_seed():
    x, y = batch()

    def losses():
        model = compiled(small_net(rate=0.5), keras.optimizers.SGD(0.0))
        use_traced_steps(model, x, y)
        keras.utils.set_random_seed(7)
        return [model.train_on_batch(x, y, return_dict=True)["loss"] for _ in range(4)]

    first = losses()
    assert len(set(first)) == 4  # no mask frozen into the graph (weights do not move: lr 0)
    assert losses() == first


class HostRead(keras.layers.Layer):
    """Reads a tensor's value on the host: no graph can hold it."""

    def call(self, x):
        return x * 2.0 if float(keras.ops.max(x)) > 0 else x


def host_read_net() -> keras.Model:
    keras.utils.set_random_seed(4)
    inputs = keras.Input((4,))
    return Net(inputs, keras.layers.Dense(4)(HostRead()(inputs)))


@on_torch
@pytest.mark.torch_compiled  # the default steps (the trace fails before Inductor compiles)
def test_a_step_that_reads_a_tensor_on_the_host_runs_eagerly_after_one_warning():
    model, reference = compiled(host_read_net()), compiled(host_read_net(), jit_compile=False)
    x, y = np.ones((2, 4), "float32"), np.array([0, 1])
    with pytest.warns(UserWarning, match="train step runs eagerly on PyTorch") as caught:
        first = model.train_on_batch(x, y, return_dict=True)
    assert len([w for w in caught if "runs eagerly" in str(w.message)]) == 1
    assert "GuardOnDataDependent" in model.train_function.eager_reason
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        second = model.train_on_batch(x, y, return_dict=True)  # eager from now on, quietly
    assert [first, second] == [reference.train_on_batch(x, y, return_dict=True) for _ in "ab"]
    assert_same_variables(reference, model, **exactly())


def two_headed_net() -> keras.Model:
    """A dict of inputs, a list of two outputs, a loss and a metric each."""
    keras.utils.set_random_seed(6)
    images, extra = keras.Input((16, 16, 3), name="images"), keras.Input((2,), name="extra")
    x = keras.layers.GlobalAveragePooling2D()(keras.layers.Conv2D(4, 3)(images))
    x = keras.layers.Concatenate()([x, extra])
    outputs = [keras.layers.Dense(3, name="kind")(x), keras.layers.Dense(1, name="size")(x)]
    model = Net({"images": images, "extra": extra}, outputs)
    model.compile(
        keras.optimizers.SGD(0.05, momentum=0.9),
        [keras.losses.SparseCategoricalCrossentropy(from_logits=True), "mse"],
        metrics=[["accuracy"], ["mae"]],
    )
    return model


@on_torch
def test_dict_inputs_two_outputs_and_sample_weights_trace_exactly():
    rng = np.random.default_rng(2)
    x = {"images": rng.normal(size=(4, 16, 16, 3)).astype("float32"),
         "extra": rng.normal(size=(4, 2)).astype("float32")}
    y = [rng.integers(0, 3, 4), rng.normal(size=(4, 1)).astype("float32")]
    weights = np.array([1.0, 0.5, 2.0, 0.0], "float32")
    eager, traced = two_headed_net(), two_headed_net()
    eager.jit_compile = False
    use_traced_steps(traced, x, y)
    for _ in range(2):
        expected = eager.train_on_batch(x, y, sample_weight=weights, return_dict=True)
        assert traced.train_on_batch(x, y, sample_weight=weights, return_dict=True) == expected
    assert traced.train_function.eager_reason is None
    assert_same_variables(eager, traced, **exactly())
    assert eager.evaluate(x, y, verbose=0) == traced.evaluate(x, y, verbose=0)
    for a, b in zip(eager.predict(x, verbose=0), traced.predict(x, verbose=0), strict=True):
        np.testing.assert_array_equal(a, b)


@on_torch
def test_a_layer_frozen_after_a_step_changes_the_graph_or_the_step_says_why():
    x, y = batch()
    eager, traced = compiled(small_net(), jit_compile=False), compiled(small_net())
    use_traced_steps(traced, x, y)
    for model in (eager, traced):
        model.train_on_batch(x, y)
        model.layers[1].trainable = False  # the convolution, without compiling again
    eager.train_on_batch(x, y)
    # The optimizer was built for the old trainable variables: Keras' eager step updates the
    # others; the stateless update refuses, and the step runs eagerly from then on.
    with pytest.warns(UserWarning, match="runs eagerly.*optimizer was built with 12 variables"):
        traced.train_on_batch(x, y)
    assert_same_variables(eager, traced, **exactly())
    np.testing.assert_allclose(
        eager.predict(x, verbose=0), traced.predict(x, verbose=0), **exactly()
    )
    for model in (eager, traced):  # compiled again with a new optimizer: one graph again
        compiled(model, jit_compile=model is traced)
    use_traced_steps(traced, x, y)
    np.testing.assert_allclose(traced.train_on_batch(x, y), eager.train_on_batch(x, y), **exactly())
    assert traced.train_function.compiles == 1 and traced.train_function.eager_reason is None
    assert_same_variables(eager, traced, **exactly())



@on_torch
def test_gradient_accumulation_runs_eagerly_after_one_warning():
    x, y = batch()

    def optimizer():
        return keras.optimizers.SGD(0.05, gradient_accumulation_steps=2)

    eager = compiled(small_net(), optimizer(), jit_compile=False)
    traced = compiled(small_net(), optimizer())
    use_traced_steps(traced, x, y)
    with pytest.warns(UserWarning, match="(?s)runs eagerly.*update variables"):
        traced.train_on_batch(x, y)
    eager.train_on_batch(x, y)
    for model in (eager, traced):
        model.train_on_batch(x, y)
    assert_same_variables(eager, traced, **exactly())


class OwnStep(Net):
    def train_step(self, data):
        return super().train_step(data)


@on_torch
@pytest.mark.torch_compiled
def test_a_model_with_its_own_train_step_or_several_steps_per_call_keeps_keras_steps():
    inputs = keras.Input((4,))
    model = OwnStep(inputs, keras.layers.Dense(2)(inputs))
    compiled(model)
    assert model.jit_compile is False  # "auto": Keras' eager steps
    model.train_on_batch(np.ones((2, 4), "float32"), np.array([0, 1]))
    assert not isinstance(model.train_function, torch_compiled_step.CompiledStep)
    several = compiled(small_net(), steps_per_execution=2)
    with pytest.raises(ValueError, match="steps_per_execution"):  # Keras' own refusal
        several.make_train_function()


def fail_from_now_on(step) -> None:
    """Each compiled graph of ``step`` raises as PyTorch 2.11's did at its second call on an
    H100 under reduce-overhead."""
    from torch._dynamo.exc import Unsupported

    def failing(*tensors):
        raise Unsupported("Attempt to trace generator")

    step._graphs = dict.fromkeys(step._graphs, failing)


def traced_in_mode(mode: str, monkeypatch=None, kind: str = "train", cuda: bool = True):
    """A small net with traced steps, ``kind``'s in ``mode``; with ``monkeypatch``, its tensors
    taken for CUDA tensors (the CUDA-graph modes' fallback applies to them only), or with
    ``cuda=False`` for CPU tensors on any device (a GPU machine's tensors are on its GPU)."""
    if monkeypatch is not None:
        monkeypatch.setattr(torch_compiled_step, "_on_cuda", lambda tensors: cuda)
    x, y = batch()
    model = compiled(small_net())
    use_traced_steps(model, x, y)
    step = getattr(model, f"{kind}_function")
    step.mode = mode
    return model, step, x, y


@on_torch
def test_a_graph_that_fails_after_its_first_call_leaves_the_step_eager_with_one_warning():
    model, step, x, y = traced_in_mode("default")
    eager = compiled(small_net(), jit_compile=False)
    eager.train_on_batch(x, y)
    model.train_on_batch(x, y)
    fail_from_now_on(step)
    with pytest.warns(UserWarning, match="runs eagerly on PyTorch.*Attempt to trace generator"):
        assert model.train_on_batch(x, y) == eager.train_on_batch(x, y)
    assert "Attempt to trace generator" in step.eager_reason
    assert_same_variables(eager, model, **exactly())


@on_torch
def test_a_cuda_graph_that_fails_is_compiled_again_without_cuda_graphs(monkeypatch):
    """PyTorch 2.11 on an H100: a training step in mode reduce-overhead compiled and ran once,
    then failed at its second call (as CUDA graphs record). The step compiles again in the mode
    without CUDA graphs, after one warning, and computes what Keras' eager step computes."""
    model, step, x, y = traced_in_mode("reduce-overhead", monkeypatch)
    eager = compiled(small_net(), jit_compile=False)
    for reference in (eager, model):
        reference.train_on_batch(x, y)
    fail_from_now_on(step)
    expected = "failed in mode 'reduce-overhead' .*compiled again in mode 'default'"
    with pytest.warns(UserWarning, match=expected) as caught:
        assert model.train_on_batch(x, y) == eager.train_on_batch(x, y)
    assert len(ours(caught)) == 1  # not also "compiled again for a new input signature"
    assert (step.mode, step.eager_reason, step.compiles) == ("default", None, 2)
    assert step.cuda_graphs_reason.startswith("mode 'reduce-overhead': Unsupported: Attempt")
    assert model.train_on_batch(x, y) == eager.train_on_batch(x, y)
    assert_same_variables(eager, model, **exactly())
    # Without CUDA graphs a failure leaves the step eager, as before.
    fail_from_now_on(step)
    with pytest.warns(UserWarning, match="runs eagerly on PyTorch"):
        model.train_on_batch(x, y)
    assert step.eager_reason is not None


@on_torch
def test_after_the_fallback_known_signatures_compile_again_without_the_new_shape_warning(
    monkeypatch,
):
    model, step, x, y = traced_in_mode("reduce-overhead", monkeypatch)
    with pytest.warns(UserWarning, match="compiled again for a new input signature"):
        for size in (4, 3):
            model.train_on_batch(x[:size], y[:size])
    fail_from_now_on(step)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for size in (4, 3):  # the first compiles the fallback, the second its own again
            model.train_on_batch(x[:size], y[:size])
    mine = ours(caught)
    assert len(mine) == 1 and "compiled again in mode 'default'" in mine[0], mine
    assert (len(step._graphs), step.compiles, step.eager_reason) == (2, 4, None)
    with pytest.warns(UserWarning, match="compiled again for a new input signature"):
        model.train_on_batch(x[:2], y[:2])  # a new one still says so


@on_torch
def test_on_a_cpu_a_failing_graph_in_a_cuda_graph_mode_leaves_the_step_eager(monkeypatch):
    """Inductor records no CUDA graph for CPU tensors: nothing to compile again without them."""
    model, step, x, y = traced_in_mode("reduce-overhead", monkeypatch, cuda=False)
    model.train_on_batch(x, y)
    fail_from_now_on(step)
    with pytest.warns(UserWarning, match="runs eagerly on PyTorch"):
        model.train_on_batch(x, y)
    assert (step.mode, step.cuda_graphs_reason) == ("reduce-overhead", None)
    assert step.eager_reason.startswith("Unsupported: Attempt to trace generator")


@on_torch
def test_a_cuda_graph_mode_that_cannot_compile_tries_without_cuda_graphs(monkeypatch):
    from torch._dynamo.exc import TorchDynamoException

    model, step, x, _ = traced_in_mode("max-autotune", monkeypatch, kind="predict")
    original, modes = step._compile, []

    def compile_once_failing(groups, data):
        modes.append(step.mode)
        if len(modes) == 1:
            raise TorchDynamoException("AssertionError in Inductor's scheduler")
        return original(groups, data)

    monkeypatch.setattr(step, "_compile", compile_once_failing)
    with pytest.warns(UserWarning, match="'max-autotune-no-cudagraphs'"):
        model.predict_on_batch(x)
    assert modes == ["max-autotune", "max-autotune-no-cudagraphs"]
    assert (step.compiles, step.eager_reason) == (1, None)


def without_the_host_read_replacement(monkeypatch) -> None:
    """Keras' SGD as it reads its learning rate on the host (``alpha`` of
    ``torch._foreach_add_`` as a tensor), without ``trace_safe_keras``'s replacement."""
    monkeypatch.setattr(stateless_steps, "_foreach_add_on_the_device", lambda add_: add_)


@on_torch
def test_a_step_that_reads_the_host_compiles_without_cuda_graphs_at_once(monkeypatch):
    """On an H200 (PyTorch 2.11) the training step's CUDA graphs failed where they record,
    because the traced step read SGD's learning rate on the host. A step that reads a value on
    the host compiles in the mode without CUDA graphs from its first call (one trace, one
    compile), after one warning that says why."""
    without_the_host_read_replacement(monkeypatch)
    model, step, x, y = traced_in_mode("reduce-overhead", monkeypatch)
    eager = compiled(small_net(), jit_compile=False)
    expected = (
        r"^lambda_keras: net_\d+'s train step reads 1 value\(s\) on the host "
        r"\(aten._local_scalar_dense.*CUDA graphs may refuse.* It is compiled in mode 'default'"
    )
    with pytest.warns(UserWarning, match=expected) as caught:
        assert model.train_on_batch(x, y) == eager.train_on_batch(x, y)
    assert len(ours(caught)) == 1
    assert (step.mode, step.compiles, step.host_reads) == ("default", 1, 1)
    assert step.eager_reason is None
    assert step.cuda_graphs_reason.startswith("mode 'reduce-overhead': reads 1 value(s)")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert model.train_on_batch(x, y) == eager.train_on_batch(x, y)


@on_torch
def test_a_step_that_reads_the_host_warns_once_on_a_gpu_only(monkeypatch):
    without_the_host_read_replacement(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # on a CPU a read costs no wait: no warning
        model, step, x, y = traced_in_mode("default", monkeypatch, cuda=False)
        model.train_on_batch(x, y)
    assert step.host_reads == 1
    model, step, x, y = traced_in_mode("default", monkeypatch)  # tensors taken for CUDA's
    with pytest.warns(UserWarning, match=r"reads 1 value\(s\) on the host.*wait for the GPU"):
        model.train_on_batch(x, y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.train_on_batch(x[:3], y[:3])  # another signature: traced again, not warned again
    mine = ours(caught)
    assert len(mine) == 1 and "compiled again for a new input signature" in mine[0], mine
    assert (step.compiles, step.host_reads) == (2, 1)


@on_torch
def test_a_signature_beyond_max_graphs_runs_eagerly_and_the_compiled_ones_stay(monkeypatch):
    """After ``MAX_GRAPHS`` signatures a batch of another runs as Keras' eager step, warned
    once; the signatures compiled before still run their graphs."""
    monkeypatch.setattr(torch_compiled_step, "MAX_GRAPHS", 2)
    x, y = batch()
    model, eager = compiled(small_net()), compiled(small_net(), jit_compile=False)
    use_traced_steps(model, x, y)
    step = model.test_function
    with pytest.warns(UserWarning, match="compiled again for a new input signature"):
        for size in (4, 3):
            model.test_on_batch(x[:size], y[:size])
    with pytest.warns(UserWarning) as caught:
        assert model.test_on_batch(x[:2], y[:2]) == eager.test_on_batch(x[:2], y[:2])
    (message,) = ours(caught)
    assert "compiled 2 input signatures, the most it keeps" in message
    assert "[2, 16, 16, 3] float32" in message
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # warned once
        assert model.test_on_batch(x[:1], y[:1]) == eager.test_on_batch(x[:1], y[:1])
        assert model.test_on_batch(x, y) == eager.test_on_batch(x, y)
    assert (step.compiles, len(step._graphs), step.eager_reason) == (2, 2, None)
    ran = []
    monkeypatch.setattr(step, "_run", lambda *a: ran.append(1) or type(step)._run(step, *a))
    model.test_on_batch(x[:3], y[:3])
    assert ran == [1]  # a compiled signature still runs its graph


def on_a_gpu_with_cuda_graphs(monkeypatch) -> None:
    """Skips without a GPU (benchmarks/torch_gpu.sh runs these tests on a lent one); sets the
    models compiled after it to ``reduce-overhead``."""
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs a GPU: benchmarks/torch_gpu.sh runs it on a lent one")
    monkeypatch.setenv(torch_compiled_step.VARIABLE, "reduce-overhead")


def assert_replayed(model, kinds=("train",), compiles: int = 1) -> None:
    """Each of ``kinds``' steps compiled ``compiles`` times (its input signatures) with CUDA
    graphs, none left out, and since ``torch._dynamo``'s counters were cleared no CUDA graph
    skipped and some recorded."""
    from torch._dynamo.utils import counters

    for kind in kinds:
        step = getattr(model, f"{kind}_function")
        assert (step.mode, step.compiles, step.host_reads) == ("reduce-overhead", compiles, 0), kind
        assert (step.cuda_graphs_reason, step.eager_reason) == (None, None), kind
    assert counters["inductor"]["cudagraph_skips"] == 0
    # Positive evidence that graphs recorded (Inductor's CUDA graph trees count each recorded
    # graph's batch inputs): a mode that silently ran without CUDA graphs would leave it at 0.
    assert counters["inductor"]["cudagraph_recorded_non_static_inputs"] > 0


@on_torch
@pytest.mark.torch_compiled
def test_on_a_gpu_the_training_step_replays_as_cuda_graphs(monkeypatch):
    """``reduce-overhead`` on a GPU: the training step records its CUDA graphs at its second
    call and replays them after, one compiled graph without a fallback, and trains as Keras'
    eager step does. PyTorch 2.11 on an H200 failed where it records while SGD's learning rate
    was read on the host. Skipped without a GPU (benchmarks/torch_gpu.sh runs it on one)."""
    from torch._dynamo.utils import counters

    x, y = batch(8)
    eager = compiled(small_net(), jit_compile=False)
    on_a_gpu_with_cuda_graphs(monkeypatch)
    model = compiled(small_net())
    counters.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        losses = [model.train_on_batch(x, y) for _ in range(5)]
    assert not ours(caught)
    assert_replayed(model)
    np.testing.assert_allclose(losses, [eager.train_on_batch(x, y) for _ in range(5)], rtol=1e-4)
    assert_same_variables(eager, model, rtol=1e-4, atol=1e-5)


@on_torch
@pytest.mark.torch_compiled
def test_on_a_gpu_fit_with_validation_and_predict_replay_as_cuda_graphs(monkeypatch):
    """``fit`` alternates the training and the evaluation step's CUDA graphs (validation after
    each epoch) and reads each step's logs before the next replay overwrites them; ``predict``
    replays its own. The same history and predictions as Keras' eager steps. Skipped without a
    GPU."""
    from torch._dynamo.utils import counters

    x, y = batch(16)
    validation = batch(8, seed=1)
    eager = compiled(small_net(), jit_compile=False)
    on_a_gpu_with_cuda_graphs(monkeypatch)
    model = compiled(small_net())
    counters.clear()
    options = {"batch_size": 4, "epochs": 2, "validation_data": validation, "shuffle": False}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        history = model.fit(x, y, verbose=0, **options).history
        predictions = model.predict(validation[0], batch_size=4, verbose=0)
    assert not ours(caught)
    assert_replayed(model, ("train", "test", "predict"))
    expected = eager.fit(x, y, verbose=0, **options).history
    for key in ("loss", "val_loss"):
        np.testing.assert_allclose(history[key], expected[key], rtol=1e-3, err_msg=key)
    np.testing.assert_allclose(
        predictions, eager.predict(validation[0], batch_size=4, verbose=0), rtol=1e-3, atol=1e-4
    )


@on_torch
@pytest.mark.torch_compiled
def test_on_a_gpu_random_layers_draw_anew_at_each_replay(monkeypatch):
    """Dropout and stochastic depth inside a replayed CUDA graph: a new draw each step (no mask
    frozen into the recording), the same draws again under the same seed. Skipped without a
    GPU."""
    from torch._dynamo.utils import counters

    x, y = batch(8)
    on_a_gpu_with_cuda_graphs(monkeypatch)

    def losses():
        model = compiled(small_net(rate=0.5), keras.optimizers.SGD(0.0))
        keras.utils.set_random_seed(7)
        return model, [model.train_on_batch(x, y, return_dict=True)["loss"] for _ in range(5)]

    counters.clear()
    model, first = losses()
    assert_replayed(model)
    assert len(set(first)) == 5  # weights do not move (learning rate 0): only the draws
    np.testing.assert_allclose(losses()[1], first, rtol=1e-4)  # cuDNN's rounding apart


@on_torch
def test_a_bad_batch_raises_keras_error_and_keeps_the_step_compiled():
    x, y = batch()
    model = compiled(small_net())
    use_traced_steps(model, x, y)
    with pytest.raises(ValueError):
        model.train_on_batch(x, np.zeros((4, 7, 2)))
    assert model.train_function.eager_reason is None
    model.train_on_batch(x, y)
    assert model.train_function.compiles == 1


@on_torch
def test_a_new_input_shape_compiles_again_with_a_warning():
    x, y = batch()
    model = compiled(small_net())
    use_traced_steps(model, x, y)
    model.train_on_batch(x, y)
    with pytest.warns(UserWarning, match=r"compiled again .*\[3, 16, 16, 3\] float32.*partial"):
        model.train_on_batch(x[:3], y[:3])
    assert model.train_function.compiles == 2
    # Another image size is not a partial batch: the advice says so.
    with pytest.warns(UserWarning, match=r"\[3, 8, 8, 3\] float32.*Each input shape compiles"):
        model.train_on_batch(x[:3, :8, :8], y[:3])


@on_torch
def test_the_switches_give_keras_own_steps(monkeypatch):
    x, y = batch()
    monkeypatch.setenv(torch_compiled_step.VARIABLE, "1")
    assert isinstance(compiled(small_net()).make_train_function(), torch_compiled_step.CompiledStep)
    for options in ({"jit_compile": False}, {"run_eagerly": True}):
        model = compiled(small_net(), **options)
        model.make_train_function()
        assert not isinstance(model.train_function, torch_compiled_step.CompiledStep), options
    import torch

    # auto: compiled on a GPU, Keras' eager steps on a CPU.
    for setting, expected in (("0", False), ("auto", torch.cuda.is_available())):
        monkeypatch.setenv(torch_compiled_step.VARIABLE, setting)
        model = compiled(small_net())
        assert model.jit_compile is expected
        model.train_on_batch(x, y)
        assert isinstance(model.train_function, torch_compiled_step.CompiledStep) is expected
    # jit_compile=True asks for the compiled step on a CPU too; with 0, Keras' own torch.compile.
    for setting, expected in (("auto", True), ("0", False)):
        monkeypatch.setenv(torch_compiled_step.VARIABLE, setting)
        model = compiled(small_net(), jit_compile=True)
        model.make_train_function()
        assert isinstance(model.train_function, torch_compiled_step.CompiledStep) is expected
        assert model.compiled_step_mode("train") == ("default" if expected else None)


@on_torch
def test_the_reason_leads_with_the_error_a_compiler_error_was_raised_while_handling():
    """PyTorch 2.11's compiled graph reports a failed check of its generated code as Dynamo's
    "Attempt to trace generator", raised while handling it: the reason names both, the real
    one first."""

    from torch._dynamo.exc import Unsupported

    try:
        try:
            raise AssertionError("expected size 128==128, stride 1==16 at dim=1")
        except AssertionError:
            raise Unsupported("Attempt to trace generator\n  Explanation: ...")  # noqa: B904
    except Unsupported as error:
        reported = error
    led_by_the_assertion = re.compile(
        r"AssertionError at \S*test_torch_compiled_step\.py:\d+ in "
        r"test_the_reason_leads_with_the_error_a_compiler_error_was_raised_while_handling: "
        r"expected size 128==128, stride 1==16 at dim=1 "
        r"\(reported as Unsupported: Attempt to trace generator\)"
    )
    text = torch_compiled_step._error_text(reported)
    assert led_by_the_assertion.fullmatch(text), text
    assert torch_compiled_step._error_text(ValueError("bad")) == "ValueError: bad"
    try:  # not a compiler error: its own message, whatever it was raised while handling
        try:
            raise KeyError("handled")
        except KeyError:
            raise ValueError("bad")  # noqa: B904
    except ValueError as error:
        assert torch_compiled_step._error_text(error) == "ValueError: bad"
    # As Dynamo's compile_wrapper raises it again (PyTorch 2.11): "from" no cause, which hides
    # the context from a traceback; seen on an H200, where CUDA graphs refused an input.
    try:
        try:
            raise reported
        except Unsupported as error:
            raise error.with_traceback(None) from error.__cause__
    except Unsupported as error:
        assert error.__suppress_context__
        again = torch_compiled_step._error_text(error)
    assert led_by_the_assertion.fullmatch(again), again
