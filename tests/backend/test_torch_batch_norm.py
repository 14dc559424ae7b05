"""A training batch's batch norm as two PyTorch operators
(lambda_keras/backend/torch_batch_norm.py): the formula's values, statistics and gradients
(map, scale, offset; with neither scale nor offset; a constant channel and large values of a
small spread), a gradient of the gradient, one node each in a traced training step and none in
a prediction, the same under Inductor, and the cases it leaves to Keras' formula (small maps
among them: the tests lower the threshold for theirs). The layer that
calls it is tested in tests/layers/test_batch_normalization.py. Runs in the PyTorch child of
tests/test_backends.py."""

import numpy as np
import pytest

pytestmark = pytest.mark.backends("torch")

SHAPES = [(2, 6, 6, 5), (3, 4, 9, 3), (1, 11, 5, 4)]  # square, landscape, upright
EPSILON = 1e-3


@pytest.fixture
def small_maps_too(monkeypatch):
    """The operators for the tests' small maps (by default only maps of at least
    ``MIN_VALUES`` values take them)."""
    from lambda_keras.backend import torch_batch_norm

    monkeypatch.setattr(torch_batch_norm, "MIN_VALUES", 1)


def inputs(shape, seed=0, dtype="float64"):
    import torch

    x = np.random.default_rng(seed).normal(3.0, 2.0, size=shape)
    x[..., 0] = 0.25  # a constant channel: variance 0
    return torch.tensor(x).to(getattr(torch, dtype))


def formula(x, scale, offset, epsilon=EPSILON):
    """The batch norm of a training batch as its formula (biased variance), differentiable."""
    mean = x.mean(dim=(0, 1, 2))
    variance = ((x - mean) ** 2).mean(dim=(0, 1, 2))
    y = (x - mean) / (variance + epsilon).sqrt()
    if scale is not None:
        y = y * scale
    if offset is not None:
        y = y + offset
    return y, mean, variance


def run(function, x, scale, offset):
    """Outputs, statistics and gradients of a weighted sum of the outputs."""
    import torch

    leaves = [t.detach().clone().requires_grad_(True) for t in (x, scale, offset) if t is not None]
    x_, *rest = leaves
    scale_ = rest.pop(0) if scale is not None else None
    offset_ = rest.pop(0) if offset is not None else None
    y, mean, variance = function(x_, scale_, offset_, EPSILON)
    weights = torch.linspace(-1, 1, y.numel(), dtype=y.dtype).reshape(y.shape)
    gradients = torch.autograd.grad((y * weights).sum(), leaves)
    return [y.detach(), mean.detach(), variance.detach(), *gradients]


def scale_and_offset(channels, scale=True, offset=True):
    import torch

    values = torch.linspace(0.5, 1.5, channels, dtype=torch.float64)
    return (values if scale else None), (values - 1.0 if offset else None)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("scale, offset", [(True, True), (False, False), (True, False)])
def test_values_statistics_and_gradients_are_the_formula(shape, scale, offset):
    from lambda_keras.backend.torch_batch_norm import batch_norm_training

    x = inputs(shape)
    weights = scale_and_offset(shape[-1], scale, offset)
    got = run(batch_norm_training, x, *weights)
    expected = run(formula, x, *weights)
    assert got[0].is_contiguous() and got[0].shape == x.shape and got[0].dtype == x.dtype
    assert len(got) == len(expected)
    for index, (a, b) in enumerate(zip(got, expected, strict=True)):  # y, mean, variance, dx...
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-9, atol=1e-9, err_msg=index)


def test_in_float32_the_variance_is_the_spread_and_never_negative():
    """Values of 1e4 +- 0.5 (``E[x^2] - E[x]^2`` cancels there) and a constant channel."""
    import torch

    from lambda_keras.backend.torch_batch_norm import batch_norm_training

    rng = np.random.default_rng(0)
    x = (1e4 + rng.uniform(-0.5, 0.5, (2, 3, 3, 16))).astype("float32")
    x[..., 0] = 1e4
    y, mean, variance = batch_norm_training(torch.tensor(x), None, None, 1e-3)
    assert torch.isfinite(y).all()
    assert (variance >= 0).all() and variance[0] <= 4 * np.spacing(np.float32(1e-3))
    expected = np.var(x.astype("float64"), axis=(0, 1, 2))
    np.testing.assert_allclose(variance.numpy(), expected, rtol=1e-4, atol=1e-7)
    np.testing.assert_allclose(mean.numpy(), x.astype("float64").mean(axis=(0, 1, 2)), rtol=1e-7)
    assert not mean.requires_grad and not variance.requires_grad


def test_a_gradient_of_the_gradient_is_the_formula():
    import torch

    from lambda_keras.backend.torch_batch_norm import batch_norm_training

    def second_order(function):
        x = inputs((2, 5, 7, 3)).requires_grad_(True)
        scale, offset = (t.requires_grad_(True) for t in scale_and_offset(3))
        y = function(x, scale, offset, EPSILON)[0]
        weights = torch.linspace(-1, 1, y.numel(), dtype=y.dtype).reshape(y.shape)
        dx, dscale = torch.autograd.grad((y * weights).sum(), (x, scale), create_graph=True)
        ((dx * dx.detach()).sum() + (dscale**2).sum()).backward()
        return x.grad.numpy(), scale.grad.numpy()

    for got, expected in zip(second_order(batch_norm_training), second_order(formula), strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-8, atol=1e-9)


def test_it_serves_4d_cpu_maps_over_the_last_axis_large_ones_when_traced(monkeypatch):
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    from lambda_keras.backend import torch_batch_norm, torch_channels_last
    from lambda_keras.backend.torch_batch_norm import MIN_VALUES, takes_the_operator

    with FakeTensorMode():  # traced: only maps of MIN_VALUES values and more
        assert takes_the_operator(torch.zeros(2, 16, 16, MIN_VALUES // 512), -1)
        assert not takes_the_operator(torch.zeros(2, 16, 16, MIN_VALUES // 512 - 1), -1)
    assert takes_the_operator(torch.zeros(2, 16, 16, MIN_VALUES // 512 - 1), -1)  # eager
    assert takes_the_operator(torch.zeros(1, 1, 1, 1), -1)
    monkeypatch.setattr(torch_batch_norm, "EAGER_EVERY_MAP", False)  # the traced rule eagerly
    assert not takes_the_operator(torch.zeros(2, 16, 16, MIN_VALUES // 512 - 1), -1)
    assert takes_the_operator(torch.zeros(2, 16, 16, MIN_VALUES // 512), -1)
    monkeypatch.setattr(torch_batch_norm, "EAGER_EVERY_MAP", True)
    monkeypatch.setattr(torch_batch_norm, "MIN_VALUES", 1)
    x = inputs((2, 3, 3, 4), dtype="float32")
    assert takes_the_operator(x, -1) and takes_the_operator(x, 3)
    assert not takes_the_operator(x, 1)
    assert not takes_the_operator(x[0], -1)  # 3-D
    assert not takes_the_operator(x.to(torch.int32), -1)
    assert not torch.func.vmap(lambda t: torch.tensor(takes_the_operator(t, -1)))(x[None]).item()
    # A transform over the weights alone (the map itself not wrapped) is a transform too.
    seen = torch.func.vmap(lambda w: torch.tensor(takes_the_operator(x, -1)) + 0 * w.sum())
    assert not seen(torch.ones(3, 4)).any()
    monkeypatch.setattr(torch_channels_last, "installed", lambda name: False)
    assert not takes_the_operator(x, -1)  # LAMBDA_KERAS_TORCH_CHANNELS_LAST=0


def test_the_rule_traces_under_dynamo_without_a_graph_break():
    """Keras' own ``jit_compile=True`` compiles with Dynamo: asking whether the map runs
    eagerly must not break its graph (Dynamo cannot trace ``is_fake``)."""
    import torch

    from lambda_keras.backend.torch_batch_norm import takes_the_operator

    def rule(x):
        return x * 2 if takes_the_operator(x, -1) else x * 3

    x = torch.ones(2, 4, 4, 8)
    explained = torch._dynamo.explain(rule)(x)
    assert explained.graph_break_count == 0, explained.break_reasons
    compiled = torch.compile(rule, backend="eager", fullgraph=True)
    np.testing.assert_array_equal(compiled(x).numpy(), 3 * np.ones((2, 4, 4, 8)))  # traced
    np.testing.assert_array_equal(rule(x).numpy(), 2 * np.ones((2, 4, 4, 8)))  # eager


def traced_step(x):
    """A training forward pass of the layer and its gradient, as a compiled step traces them
    (``make_fx`` with fake tensors, the layer's variables as inputs: ``stateless_call``)."""
    import torch
    from torch.fx.experimental.proxy_tensor import make_fx

    from lambda_keras.layers import BatchNormalization

    layer = BatchNormalization(momentum=0.5)
    layer.build(tuple(x.shape))
    trainable = [v.value.detach() for v in layer.trainable_variables]
    moving = [v.value.detach() for v in layer.non_trainable_variables]

    def step(x, gradient, *variables):
        with torch.enable_grad():
            x, *weights = (t.detach().requires_grad_(True) for t in (x, *variables[:2]))
            out, moved = layer.stateless_call(weights, variables[2:], x, training=True)
            out = torch.nn.functional.silu(out)
            return out, *torch.autograd.grad(out, [x, *weights], gradient), *moved

    gradient = torch.linspace(-1, 1, x.numel()).reshape(x.shape)
    arguments = (x, gradient, *trainable, *moving)
    return step, make_fx(step, tracing_mode="fake")(*arguments), arguments, layer


def targets(graph) -> list[str]:
    return [str(node.target) for node in graph.graph.nodes if node.op == "call_function"]


def test_a_traced_step_holds_the_batch_norm_and_its_gradient_as_one_node_each(small_maps_too):
    import torch
    from torch.fx.experimental.proxy_tensor import make_fx

    x = inputs((2, 6, 6, 4), dtype="float32")
    _, graph, _, layer = traced_step(x)
    called = targets(graph)
    assert called.count("lambda_keras.batch_norm_training.default") == 1
    assert called.count("lambda_keras.batch_norm_training_backward.default") == 1
    assert not [t for t in called if "batch_norm" in t and not t.startswith("lambda_keras")]
    assert not [t for t in called if t.startswith(("aten.var", "aten.mean"))], called
    variables = [v.value.detach() for v in layer.variables]

    def predict(x, *variables):
        return layer.stateless_call(variables[:2], variables[2:], x, training=False)[0]

    with torch.no_grad():  # a prediction normalizes with the moving statistics
        prediction = make_fx(predict, tracing_mode="fake")(x, *variables)
    assert not [t for t in targets(prediction) if t.startswith("lambda_keras")]


@pytest.mark.torch_compiled  # Inductor compiles (a few seconds)
def test_inductor_calls_the_operators_and_gives_their_results(small_maps_too):
    import torch
    from torch._inductor.utils import run_and_get_code

    x = inputs((2, 6, 6, 4), dtype="float32")
    step, graph, arguments, _ = traced_step(x)
    compiled = torch.compile(graph, fullgraph=True, dynamic=False)
    with torch.no_grad(), torch._inductor.config.patch(fx_graph_cache=False):
        got, codes = run_and_get_code(compiled, *arguments)
    assert any("lambda_keras.batch_norm_training_backward" in code for code in codes)
    expected = step(*arguments)
    assert len(got) == len(expected) == 6  # outputs, 3 gradients, 2 moving statistics
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)
