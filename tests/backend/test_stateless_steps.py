"""The stateless steps' trace on PyTorch (lambda_keras/backend/stateless_steps.py): Keras'
optimizers read nothing on the host in a traced training step (SGD and Adadelta pass the
learning rate to ``torch._foreach_add_`` as ``alpha``, which PyTorch reads as a number; Nadam
reads its momentum schedule's product with ``convert_to_numpy``) and train as Keras' eager step
does. Runs in the PyTorch child of tests/test_backends.py."""

import keras
import numpy as np
import pytest

from lambda_keras.backend import stateless_steps
from tests.backend.test_torch_compiled_step import (
    assert_same_variables,
    batch,
    compiled,
    eager_batch_norms_as_traced,  # noqa: F401 (autouse: bit-for-bit comparisons)
    exactly,
    small_net,
    use_traced_steps,
    without_the_host_read_replacement,
)

on_torch = pytest.mark.backends("torch")

OPTIMIZERS = {
    "sgd": lambda: keras.optimizers.SGD(0.05),
    "sgd_momentum": lambda: keras.optimizers.SGD(0.05, momentum=0.9),
    "sgd_nesterov": lambda: keras.optimizers.SGD(0.05, momentum=0.9, nesterov=True),
    "sgd_schedule": lambda: keras.optimizers.SGD(
        keras.optimizers.schedules.CosineDecay(0.1, decay_steps=10)
    ),
    "adadelta": lambda: keras.optimizers.Adadelta(1.0),
    "adamw": lambda: keras.optimizers.AdamW(1e-3),
    "rmsprop": lambda: keras.optimizers.RMSprop(1e-3, momentum=0.9, centered=True),
    "nadam": lambda: keras.optimizers.Nadam(1e-3),
}


@on_torch
@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_a_traced_training_step_reads_nothing_on_the_host(name):
    x, y = batch(8)
    eager = compiled(small_net(), OPTIMIZERS[name](), jit_compile=False)
    traced = compiled(small_net(), OPTIMIZERS[name]())
    use_traced_steps(traced, x, y)
    for _ in range(3):
        expected = eager.train_on_batch(x, y, return_dict=True)
        np.testing.assert_allclose(
            list(traced.train_on_batch(x, y, return_dict=True).values()),
            list(expected.values()), **exactly(),
        )
    step = traced.train_function
    assert (step.compiles, step.eager_reason, step.host_reads) == (1, None, 0)
    assert_same_variables(eager, traced, **exactly())


@on_torch
def test_without_the_replacement_sgd_reads_its_learning_rate_on_the_host(monkeypatch):
    """What the replacement removes: Keras' SGD hands ``torch._foreach_add_`` its learning rate
    as a tensor ``alpha``, which PyTorch reads on the host."""
    without_the_host_read_replacement(monkeypatch)
    x, y = batch(8)
    traced = compiled(small_net())  # SGD with momentum
    use_traced_steps(traced, x, y)
    traced.train_on_batch(x, y)
    assert traced.train_function.host_reads == 1


@on_torch
@pytest.mark.parametrize("alpha_dtype", ["float32", "float64"])
def test_foreach_add_with_a_tensor_alpha_adds_the_product(alpha_dtype):
    import torch

    rng = np.random.default_rng(0)
    tensors = [torch.tensor(rng.normal(size=s), dtype=torch.float32) for s in [(3,), (2, 2)]]
    others = [torch.tensor(rng.normal(size=t.shape), dtype=torch.float32) for t in tensors]
    alpha = torch.tensor(-0.37, dtype=getattr(torch, alpha_dtype))
    expected = [t.clone() for t in tensors]
    torch._foreach_add_(expected, others, alpha=float(alpha))
    add_ = stateless_steps._foreach_add_on_the_device(torch._foreach_add_)
    ours = [t.clone() for t in tensors]
    add_(ours, others, alpha=alpha)
    for mine, theirs in zip(ours, expected, strict=True):
        assert mine.dtype == torch.float32
        assert torch.equal(mine, theirs)  # one fused multiply-add, as PyTorch's addition
    # A number for alpha, or no alpha, reaches PyTorch's function as it is: bit for bit.
    for kwargs in ({"alpha": 0.5}, {}):
        mine, theirs = [t.clone() for t in tensors], [t.clone() for t in tensors]
        add_(mine, others, **kwargs)
        torch._foreach_add_(theirs, others, **kwargs)
        for a, b in zip(mine, theirs, strict=True):
            assert torch.equal(a, b)
    scalar = [t.clone() for t in tensors]
    add_(scalar, 2.0)  # a number added to every tensor
    assert all(torch.equal(s, t + 2.0) for s, t in zip(scalar, tensors, strict=True))


@on_torch
def test_the_replacements_last_only_while_a_step_is_traced():
    import torch
    from keras.src.backend.torch import core
    from keras.src.backend.torch.optimizers import torch_nadam

    def replaced():
        return torch._foreach_add_, torch_nadam.core

    original = replaced()
    assert original[1] is core
    with stateless_steps.trace_safe_keras():
        assert all(a is not b for a, b in zip(replaced(), original, strict=True))
        tensor = torch.tensor(0.25)
        assert torch_nadam.core.convert_to_numpy(tensor) is tensor  # kept on the device
        assert torch_nadam.core.convert_to_numpy(0.5) == 0.5
        assert torch_nadam.core.cast is core.cast  # the rest of the module as it is
    assert replaced() == original
    with pytest.raises(RuntimeError, match="inside"), stateless_steps.trace_safe_keras():
        raise RuntimeError("inside")
    assert replaced() == original


@on_torch
def test_without_the_replacement_nadam_cannot_be_traced(monkeypatch):
    """What the replacement removes: Keras' Nadam reads its momentum schedule's product with
    ``convert_to_numpy``, which a traced step cannot do, so its step ran eagerly."""
    monkeypatch.setattr(stateless_steps, "_tensors_kept", lambda module: module)  # Keras' own
    x, y = batch(8)
    traced = compiled(small_net(), keras.optimizers.Nadam(1e-3))
    use_traced_steps(traced, x, y)
    with pytest.warns(UserWarning, match=r"train step runs eagerly.*\.numpy\(\) is not supp"):
        traced.train_on_batch(x, y)
    assert ".numpy()" in traced.train_function.eager_reason
