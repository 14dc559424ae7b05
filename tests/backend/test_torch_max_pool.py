"""Max pooling as two PyTorch operators (lambda_keras/backend/torch_max_pool.py): PyTorch's own
values and gradients (ties and -inf padding included, in every float type), one node each in a
traced training step and none in a prediction, the same under Inductor, which calls them
instead of writing its own gradient, a gradient of the gradient and ``torch.func.vmap`` as
PyTorch's own, and a window larger than the map refused by name. Runs in the PyTorch child of
tests/test_backends.py."""

import numpy as np
import pytest

pytestmark = pytest.mark.backends("torch")

CASES = [  # (input shape [b, h, w, c], pool, strides)
    ((2, 9, 14, 4), (3, 3), (2, 2)),  # landscape, odd sizes
    ((1, 15, 6, 3), (3, 3), (2, 2)),  # upright
    ((2, 8, 8, 5), (2, 2), (2, 2)),  # square, windows that do not overlap
    ((1, 7, 9, 2), (3, 2), (1, 2)),  # a window and strides of two sizes
]


def pytorch_own(x, pool, strides):
    import torch.nn.functional as F

    return F.max_pool2d(x.permute(0, 3, 1, 2), pool, strides).permute(0, 2, 3, 1)


def value_and_gradient(function, x, *args):
    import torch

    x = x.detach().clone().requires_grad_(True)
    out = function(x, *args)
    weights = torch.linspace(-1, 1, out.numel(), dtype=out.dtype).reshape(out.shape)
    (out * weights).sum().backward()
    return out.detach(), x.grad


def inputs(shape, seed=0, dtype="float32"):
    import torch

    x = np.random.default_rng(seed).normal(size=shape).astype("float32")
    x[..., 0] = np.maximum(x[..., 0], 0)  # a ReLU's zeros: windows whose maximum is tied
    x[:, 0, :, 1] = -np.inf  # a padded row: -inf never wins a window that holds a number
    return torch.tensor(x).to(getattr(torch, dtype))


@pytest.mark.parametrize("shape, pool, strides", CASES)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_values_and_gradients_are_pytorch_own(shape, pool, strides, dtype):
    from lambda_keras.backend.torch_max_pool import max_pool2d

    x = inputs(shape, dtype=dtype)
    expected, expected_gradient = value_and_gradient(pytorch_own, x, pool, strides)
    out, gradient = value_and_gradient(max_pool2d, x, pool, strides)
    assert out.shape == expected.shape and out.dtype == x.dtype and out.is_contiguous()
    assert gradient.is_contiguous()
    np.testing.assert_array_equal(out.float().numpy(), expected.float().numpy())
    np.testing.assert_array_equal(gradient.float().numpy(), expected_gradient.float().numpy())


@pytest.mark.parametrize("shape, pool, strides", CASES[:2])
def test_without_a_gradient_it_is_pytorch_own_pooling_as_before(shape, pool, strides):
    import torch

    from lambda_keras.backend.torch_max_pool import max_pool2d

    x = inputs(shape).requires_grad_(True)
    with torch.no_grad():
        out = max_pool2d(x, pool, strides)
    np.testing.assert_array_equal(out.numpy(), pytorch_own(x, pool, strides).detach().numpy())
    assert out.is_contiguous()


def test_a_gradient_of_the_gradient_is_pytorch_own():
    import torch

    from lambda_keras.backend.torch_max_pool import max_pool2d

    def second_order(function):
        x = inputs((2, 9, 14, 4)).requires_grad_(True)
        out = function(x, (3, 3), (2, 2))
        weights = torch.linspace(-1, 1, out.numel()).reshape(out.shape).requires_grad_(True)
        (gradient,) = torch.autograd.grad((out * weights).sum(), x, create_graph=True)
        (gradient * gradient.detach()).sum().backward()  # reaches the weights through it
        return gradient.detach().numpy(), weights.grad.numpy()

    for got, expected in zip(second_order(max_pool2d), second_order(pytorch_own), strict=True):
        np.testing.assert_array_equal(got, expected)


def test_vmap_over_a_leading_axis_is_each_map_pooled():
    import torch

    from lambda_keras.backend.torch_max_pool import max_pool2d

    maps = torch.stack([inputs((2, 9, 14, 4), seed=s) for s in range(3)])
    out = torch.func.vmap(lambda x: max_pool2d(x, (3, 3), (2, 2)))(maps)
    for got, x in zip(out, maps, strict=True):
        np.testing.assert_array_equal(got.numpy(), pytorch_own(x, (3, 3), (2, 2)).numpy())


@pytest.mark.parametrize("shape, pool", [((1, 2, 9, 3), (3, 3)), ((1, 9, 1, 3), (2, 2))])
def test_a_window_larger_than_the_map_is_refused_by_name(shape, pool):
    from lambda_keras.backend.torch_max_pool import max_pool2d

    x = inputs(shape).requires_grad_(True)
    with pytest.raises(ValueError, match=r"pool_size=\(\d, \d\) does not fit the map"):
        max_pool2d(x, pool, (1, 1))


def traced_step(x):
    """A forward pass and its gradient through ``keras.ops.max_pool``, as a compiled step
    traces them (``make_fx`` with fake tensors)."""
    import keras
    import torch
    from torch.fx.experimental.proxy_tensor import make_fx

    def step(x, gradient):
        with torch.enable_grad():
            x = x.requires_grad_(True)
            out = keras.ops.max_pool(torch.nn.functional.silu(x), 3, 2)
            return out, torch.autograd.grad(out, x, gradient)[0]

    gradient = torch.linspace(-1, 1, 2 * 7 * 7 * 4).reshape(2, 7, 7, 4)
    return step, make_fx(step, tracing_mode="fake")(x, gradient), gradient


def targets(graph) -> list[str]:
    return [str(node.target) for node in graph.graph.nodes if node.op == "call_function"]


def test_a_traced_step_holds_the_pooling_and_its_gradient_as_one_node_each():
    import keras
    import torch
    from torch.fx.experimental.proxy_tensor import make_fx

    x = inputs((2, 15, 15, 4))
    _, graph, _ = traced_step(x)
    called = targets(graph)
    assert called.count("lambda_keras.max_pool2d.default") == 1
    assert called.count("lambda_keras.max_pool2d_backward.default") == 1
    assert not [t for t in called if t.startswith("aten.max_pool2d")], called
    # A prediction takes no gradient: PyTorch's own pooling, which Inductor fuses.
    with torch.no_grad():
        prediction = make_fx(lambda x: keras.ops.max_pool(x, 3, 2), tracing_mode="fake")(x)
    assert not [t for t in targets(prediction) if t.startswith("lambda_keras")]


@pytest.mark.torch_compiled  # Inductor compiles (a few seconds)
def test_inductor_calls_the_operators_and_gives_their_results():
    import torch
    from torch._inductor.utils import run_and_get_code

    x = inputs((2, 15, 15, 4))
    step, graph, gradient = traced_step(x)
    compiled = torch.compile(graph, fullgraph=True, dynamic=False)
    with torch.no_grad(), torch._inductor.config.patch(fx_graph_cache=False):
        (out, grad), codes = run_and_get_code(compiled, x, gradient)
    assert any("lambda_keras.max_pool2d_backward" in code for code in codes)
    expected, expected_gradient = step(x, gradient)
    np.testing.assert_array_equal(out.numpy(), expected.detach().numpy())
    np.testing.assert_allclose(grad.numpy(), expected_gradient.numpy(), rtol=1e-6, atol=1e-7)
