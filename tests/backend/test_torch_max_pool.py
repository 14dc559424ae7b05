"""Max pooling as two PyTorch operators (lambda_keras/backend/torch_max_pool.py): PyTorch's own
values and gradients (ties and -inf padding included, in every float type), one node each in a
traced step, and the same under Inductor, which calls them instead of writing its own gradient.
Runs in the PyTorch child of tests/test_backends.py."""

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
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_values_and_gradients_are_pytorch_own(shape, pool, strides, dtype):
    from lambda_keras.backend.torch_max_pool import max_pool2d

    x = inputs(shape, dtype=dtype)
    expected, expected_gradient = value_and_gradient(pytorch_own, x, pool, strides)
    out, gradient = value_and_gradient(max_pool2d, x, pool, strides)
    assert out.shape == expected.shape and out.dtype == x.dtype and out.is_contiguous()
    assert gradient.is_contiguous()
    np.testing.assert_array_equal(out.float().numpy(), expected.float().numpy())
    np.testing.assert_array_equal(gradient.float().numpy(), expected_gradient.float().numpy())


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


def test_a_traced_step_holds_the_pooling_and_its_gradient_as_one_node_each():
    x = inputs((2, 15, 15, 4))
    _, graph, _ = traced_step(x)
    targets = [str(node.target) for node in graph.graph.nodes if node.op == "call_function"]
    assert targets.count("lambda_keras.max_pool2d.default") == 1
    assert targets.count("lambda_keras.max_pool2d_backward.default") == 1
    assert not [t for t in targets if t.startswith("aten.max_pool2d")], targets


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
