"""Keras' training, evaluation and prediction steps as functions of PyTorch tensors: what
[`CompiledStep`][lambda_keras.backend.torch_compiled_step.CompiledStep] traces into one graph.

Each step takes the model, its state (the values of the trainable, non-trainable, optimizer and
metric variables, in groups) and a batch, and returns what Keras' step returns with the new
state, written as Keras' JAX trainer writes its steps (``stateless_call``, the loss,
``optimizer.stateless_apply``, the metrics under a ``StatelessScope``) with the gradient from
``torch.autograd.grad``: [`STEPS`][lambda_keras.backend.stateless_steps.STEPS].
[`trace_safe_keras`][lambda_keras.backend.stateless_steps.trace_safe_keras] replaces the Keras
functions that would read a tensor on the host while a step is traced.
"""

from __future__ import annotations

import contextlib
import threading

import keras

from lambda_keras.backend.host_initializers import _Delegate

__all__ = ["STEPS", "clone", "has_values", "is_tensor", "trace_safe_keras"]

_TRACING = threading.Lock()


@contextlib.contextmanager
def trace_safe_keras():
    """Keras' PyTorch functions that would read a tensor on the host, replaced while a step is
    traced: random draws from PyTorch's generator instead of one built from a ``SeedGenerator``'s
    state, ``keras.ops.cond`` on a tensor as a selection between both branches, and
    ``torch._foreach_add_`` with a tensor ``alpha`` (Keras' SGD and Adadelta pass the learning
    rate so) as a multiply-add on the device, and Keras' Nadam's ``convert_to_numpy`` of its
    momentum schedule's product as that tensor itself."""
    import torch
    from keras.src.backend.torch import core, random
    from keras.src.backend.torch.optimizers import torch_nadam

    with _TRACING:  # one trace at a time: each restores what it replaced
        saved = random.torch_seed_generator, core.cond, torch._foreach_add_, torch_nadam.core
        random.torch_seed_generator = _global_generator
        core.cond = _select
        torch._foreach_add_ = _foreach_add_on_the_device(torch._foreach_add_)
        torch_nadam.core = _tensors_kept(core)
        try:
            yield
        finally:
            (
                random.torch_seed_generator, core.cond, torch._foreach_add_, torch_nadam.core
            ) = saved


def _global_generator(seed):
    """``torch_seed_generator`` while tracing: None, PyTorch's default generator."""
    del seed
    return None


def _foreach_add_on_the_device(foreach_add_):
    """``foreach_add_`` (PyTorch's ``torch._foreach_add_``) taking a tensor ``alpha`` as a
    factor of ``others`` on the device. PyTorch reads a tensor ``alpha`` on the host as a number
    (``aten._local_scalar_dense``): in a traced step, a wait for the device at every step, and
    an input that CUDA graphs refuse where they record (PyTorch 2.11). The replacement is
    ``addcmul`` (``tensors + others * alpha``): for float32 and float16 tensors the same bits as
    the addition with ``alpha`` (one fused multiply-add); bfloat16 tensors may differ in their
    last bit (``alpha`` rounded to bfloat16 first). Keras' variables are float32 under its
    mixed policies."""
    import torch

    def add_(tensors, *args, **kwargs):
        alpha = kwargs.pop("alpha", None)
        others = args[0] if len(args) == 1 and not kwargs else None
        if isinstance(alpha, torch.Tensor) and isinstance(others, (list, tuple)):
            return torch._foreach_addcmul_(tensors, others, [alpha] * len(others))
        if alpha is not None:
            kwargs["alpha"] = alpha
        return foreach_add_(tensors, *args, **kwargs)

    return add_


def _tensors_kept(core):
    """Keras' PyTorch ``core`` module as its Nadam sees it while a step is traced:
    ``convert_to_numpy`` hands a tensor back as it is. Nadam divides its moments by
    ``1 - convert_to_numpy(u_product)`` (a scalar in the variables' dtype, read on the host at
    every step); the tensor ``1 - u_product`` gives ``torch._foreach_div`` the same divisor on
    the device."""

    def convert_to_numpy(x):
        return x if is_tensor(x) else core.convert_to_numpy(x)

    return _Delegate(core, convert_to_numpy=convert_to_numpy)


def _select(pred, true_fn, false_fn):
    """``cond`` as a selection: both branches computed, the false one first and copied (a
    branch may update tensors in place that the other returns, as Keras' optimizers do)."""
    import torch

    if not isinstance(pred, torch.Tensor):
        return true_fn() if pred else false_fn()
    otherwise = false_fn()
    if not any(is_tensor(leaf) for leaf in keras.tree.flatten(otherwise)):
        # Branches that update variables instead of returning values (an optimizer's gradient
        # accumulation, its moving average of the weights): a selection would run both.
        raise NotImplementedError(
            "keras.ops.cond whose branches return no tensor (they update variables) cannot be "
            "compiled into one graph"
        )
    otherwise = keras.tree.map_structure(clone, otherwise)
    chosen = true_fn()
    return keras.tree.map_structure(lambda a, b: _where(pred, a, b), chosen, otherwise)


def clone(value):
    """A copy of a PyTorch tensor (another value as it is)."""
    import torch

    return value.clone() if isinstance(value, torch.Tensor) else value


def _where(pred, a, b):
    import torch

    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return torch.where(pred, torch.as_tensor(a), torch.as_tensor(b))
    return a


def is_tensor(value) -> bool:
    """Whether ``value`` is a PyTorch tensor."""
    import torch

    return isinstance(value, torch.Tensor)


def has_values(value) -> bool:
    """Whether ``value`` is a PyTorch tensor that holds values: not a placeholder of a trace
    (a fake tensor of the step's trace, a tensor under ``torch.compile``) nor of Keras' symbolic
    pass (the ``meta`` device). Code that reads a tensor on the host, or sizes a result by its
    values, asks this first and keeps static shapes otherwise."""
    import torch
    from torch._subclasses.fake_tensor import is_fake

    return (
        not torch.compiler.is_compiling()  # first: Dynamo cannot trace is_fake (a graph break)
        and isinstance(value, torch.Tensor)
        and value.device.type != "meta"
        and not is_fake(value)
    )


def _forward_and_loss(model, state, inputs, training: bool):
    """Keras' JAX trainer's ``compute_loss_and_updates`` on PyTorch tensors, from the
    trainable, non-trainable and metric values: the loss (unscaled), the outputs, the new
    non-trainable and metric values."""
    trainable, non_trainable, metrics = state
    x, y, sample_weight = inputs
    kwargs = {"training": training} if model._call_has_training_arg else {}
    y_pred, non_trainable, losses = model.stateless_call(
        trainable, non_trainable, x, return_losses=True, **kwargs
    )
    if losses:
        model._losses_override = losses
    try:
        loss, (_, non_trainable, metrics) = model.stateless_compute_loss(
            trainable, non_trainable, metrics, x=x, y=y, y_pred=y_pred,
            sample_weight=sample_weight, training=training,
        )
    finally:
        if losses:
            model._losses_override = []
    return loss, y_pred, non_trainable, metrics


def _metrics(model, metrics, loss, inputs, y_pred):
    """The loss tracker and the compiled metrics updated; the logs and the new metric values."""
    x, y, sample_weight = inputs
    mapping = list(zip(model.metrics_variables, metrics, strict=True))
    with keras.StatelessScope(state_mapping=mapping) as scope:
        first = next(t for t in keras.tree.flatten(x) if t is not None)
        model._loss_tracker.update_state(loss, sample_weight=first.shape[0])
        logs = model.compute_metrics(x, y, y_pred, sample_weight)
    new = [scope.get_current_value(v) for v in model.metrics_variables]
    return logs, [n if n is not None else old for n, old in zip(new, metrics, strict=True)]


def _train(model, state, inputs):
    import torch

    trainable, non_trainable, optimizer_values, metrics = state
    inputs = keras.utils.unpack_x_y_sample_weight(inputs)
    params = [t.detach().requires_grad_(True) for t in trainable]
    with torch.enable_grad():
        loss, y_pred, non_trainable, metrics = _forward_and_loss(
            model, [params, non_trainable, metrics], inputs, training=True
        )
        mapping = list(zip(model.optimizer.variables, optimizer_values, strict=True))
        with keras.StatelessScope(state_mapping=mapping):
            scaled = model.optimizer.scale_loss(loss)
        grads = torch.autograd.grad(scaled, params, allow_unused=True) if params else []
    new_trainable, optimizer_values = model.optimizer.stateless_apply(
        optimizer_values, list(grads), [p.detach() for p in params]
    )
    y_pred = keras.tree.map_structure(lambda t: t.detach() if is_tensor(t) else t, y_pred)
    logs, metrics = _metrics(model, metrics, loss.detach(), inputs, y_pred)
    return logs, [list(new_trainable), list(non_trainable), list(optimizer_values), metrics]


def _test(model, state, inputs):
    trainable, non_trainable, metrics = state
    inputs = keras.utils.unpack_x_y_sample_weight(inputs)
    loss, y_pred, non_trainable, metrics = _forward_and_loss(model, state, inputs, training=False)
    logs, metrics = _metrics(model, metrics, loss, inputs, y_pred)
    return logs, [trainable, list(non_trainable), metrics]


def _predict(model, state, inputs):
    trainable, non_trainable = state
    x, _, _ = keras.utils.unpack_x_y_sample_weight(inputs)
    kwargs = {"training": False} if model._call_has_training_arg else {}
    outputs, non_trainable = model.stateless_call(trainable, non_trainable, x, **kwargs)
    return outputs, [trainable, list(non_trainable)]


STEPS = {"train": _train, "test": _test, "predict": _predict}
"""Each kind of step: ``(model, state, batch) -> (outputs, new state)``."""
