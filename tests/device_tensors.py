"""Backend tensors that live off the host, on a machine without an accelerator.

On a GPU a PyTorch tensor refuses to become a NumPy array implicitly (``np.asarray(t)``,
``t.numpy()``, and NumPy arithmetic such as ``t - ndarray``, which NumPy computes by converting
``t``): ``TypeError: can't convert cuda:0 device type tensor to numpy``. On a CPU the same code
converts silently, so a conversion that a GPU refuses goes unseen in tests that run here.

[`tensors_off_the_host`][tests.device_tensors.tensors_off_the_host] makes the backend's tensors
refuse it here. PyTorch, as a CUDA tensor does: ``__array__`` and ``.numpy()`` raise
``TypeError`` unless the tensor was moved to the host first (``.cpu()``, then ``detach``,
``contiguous``, ``clone``, ``float`` or ``to`` of that; ``numpy(force=True)``; a tensor made by
``torch.from_numpy``) or the conversion runs inside Keras' ``convert_to_numpy``, which moves a
tensor to the host before converting it. ``.to("cpu")`` does not count as a move: Keras calls it
to put every tensor on its device, the CPU here. JAX converts an array on a GPU implicitly (a
silent copy); there the harness holds the project to its rule, one function to the host:
``np.asarray`` / ``np.array`` / ``np.asanyarray`` of a JAX array refuse unless called from
Keras, JAX, optree or NumPy themselves (Keras' own trainers convert so), from
``keras.ops.convert_to_numpy`` or ``jax.device_get``; NumPy ufuncs that read a CPU array's
buffer (``np.maximum(ndarray, x)``) go unseen. What a GPU allows stays allowed: ``float(t)``,
``t.item()``, ``t.tolist()``, NumPy arrays and Python numbers converted into tensors.

Examples:

```python
with tensors_off_the_host():
    detect(model, photo)  # any implicit conversion raises TypeError, with its traceback
```
"""

from __future__ import annotations

import contextlib
import functools
import sys
import threading

import keras

MESSAGE = (
    "can't convert an off-host {backend} tensor to numpy implicitly (a CUDA tensor refuses it; "
    "the project converts in one place): use keras.ops.convert_to_numpy"
)
_HOST = "_lambda_keras_on_host"  # set on a PyTorch tensor that lives on the host (see above)
_state = threading.local()  # depth of sanctioned conversions under way on this thread


def _sanctioned() -> bool:
    return getattr(_state, "depth", 0) > 0


def _sanction(function):
    """``function`` with conversions allowed while it runs (Keras' ``convert_to_numpy``)."""

    @functools.wraps(function)
    def converting(*args, **kwargs):
        _state.depth = getattr(_state, "depth", 0) + 1
        try:
            return function(*args, **kwargs)
        finally:
            _state.depth -= 1

    return converting


@contextlib.contextmanager
def _patched(owner, name: str, value):
    original = owner.__dict__[name] if name in owner.__dict__ else None
    setattr(owner, name, value)
    try:
        yield
    finally:
        if original is None:
            delattr(owner, name)
        else:
            setattr(owner, name, original)


@contextlib.contextmanager
def _sanctioned_everywhere(function):
    """Every Keras module's reference to ``function`` replaced by its sanctioned wrapper."""
    wrapper = _sanction(function)
    holders = [
        module
        for name, module in list(sys.modules.items())
        if name.startswith("keras") and getattr(module, "convert_to_numpy", None) is function
    ]
    with contextlib.ExitStack() as stack:
        for module in holders:
            stack.enter_context(_patched(module, "convert_to_numpy", wrapper))
        yield


def _refusing(original, backend: str, allowed=lambda tensor: False):
    @functools.wraps(original)
    def refuse(self, *args, **kwargs):
        if not (_sanctioned() or allowed(self) or kwargs.get("force")):  # numpy(force=True)
            raise TypeError(MESSAGE.format(backend=backend))
        return original(self, *args, **kwargs)

    return refuse


def _to_host(original):
    """``.cpu()``: a CPU tensor's own method returns the tensor itself; here a new alias marked
    as host memory, what a GPU tensor's ``.cpu()`` gives. (``.to("cpu")`` is what Keras itself
    calls to put a tensor on its device, the CPU here: not a move to the host.)"""

    @functools.wraps(original)
    def move(self, *args, **kwargs):
        result = original(self, *args, **kwargs)
        if result is self:
            result = result.view_as(result)
        setattr(result, _HOST, True)
        return result

    return move


def _on_host(original):
    """A function whose tensors are made in host memory (``torch.from_numpy``)."""

    @functools.wraps(original)
    def make(*args, **kwargs):
        result = original(*args, **kwargs)
        setattr(result, _HOST, True)
        return result

    return make


def _keeps_host(original):
    @functools.wraps(original)
    def keep(self, *args, **kwargs):
        result = original(self, *args, **kwargs)
        if getattr(self, _HOST, False):
            setattr(result, _HOST, True)
        return result

    return keep


@contextlib.contextmanager
def _torch_off_the_host():
    import torch
    from keras.src.backend.torch import core

    def is_on_host(tensor):
        return getattr(tensor, _HOST, False)

    tensor = torch.Tensor
    with contextlib.ExitStack() as stack:
        stack.enter_context(_sanctioned_everywhere(core.convert_to_numpy))
        for name in ("__array__", "numpy"):
            refusing = _refusing(getattr(tensor, name), "PyTorch", is_on_host)
            stack.enter_context(_patched(tensor, name, refusing))
        stack.enter_context(_patched(tensor, "cpu", _to_host(tensor.cpu)))
        stack.enter_context(_patched(torch, "from_numpy", _on_host(torch.from_numpy)))
        for name in ("detach", "contiguous", "clone", "float", "to"):
            stack.enter_context(_patched(tensor, name, _keeps_host(getattr(tensor, name))))
        yield


# Keras' JAX trainers convert their outputs with np.asarray (predict_on_batch, evaluate's logs):
# implicit copies that JAX makes on a GPU unless a guard refuses them. Keras' own are not the
# project's to fix; a conversion whose caller is one of these packages is let through.
_THIRD_PARTY = ("keras", "jax", "jaxlib", "optree", "numpy", "ml_dtypes")


def _called_by_third_party(depth: int) -> bool:
    caller = sys._getframe(depth + 1).f_globals.get("__name__", "")
    return caller.split(".")[0] in _THIRD_PARTY


def _numpy_refusing(original, is_device_array, backend: str):
    """``np.asarray`` / ``np.array`` / ``np.asanyarray`` refusing the backend's arrays: NumPy
    reads a JAX array on a CPU through the buffer protocol, which no ``__array__`` patch sees."""

    @functools.wraps(original)
    def convert(value, *args, **kwargs):
        if is_device_array(value) and not (_sanctioned() or _called_by_third_party(1)):
            raise TypeError(MESSAGE.format(backend=backend))
        return original(value, *args, **kwargs)

    return convert


@contextlib.contextmanager
def _jax_off_the_host():
    """The project's rule for JAX arrays (on a GPU JAX would copy them to the host silently):
    ``np.asarray(x)``, ``np.array(x)``, ``np.asanyarray(x)`` from the project's code refuse;
    ``jax.device_get``, ``keras.ops.convert_to_numpy`` and a Keras variable's ``numpy()``
    convert. NumPy ufuncs over a JAX array on a CPU read its buffer unseen; on a GPU JAX computes
    ``x - ndarray`` itself."""
    import jax
    import numpy as np
    from keras.src.backend.jax import core

    def is_device_array(value):
        return isinstance(value, jax.Array) and not isinstance(value, jax.core.Tracer)

    with contextlib.ExitStack() as stack:
        stack.enter_context(_sanctioned_everywhere(core.convert_to_numpy))
        stack.enter_context(_patched(jax, "device_get", _sanction(jax.device_get)))
        for name in ("asarray", "array", "asanyarray"):
            numpy_function = _numpy_refusing(getattr(np, name), is_device_array, "JAX")
            stack.enter_context(_patched(np, name, numpy_function))
        yield


@contextlib.contextmanager
def tensors_off_the_host():
    """Within the block, the Keras backend's tensors refuse implicit conversion to NumPy as a
    CUDA tensor does (``TypeError``); ``keras.ops.convert_to_numpy`` (and on PyTorch a tensor
    moved with ``.cpu()``, and what ``detach``, ``contiguous``, ``clone``, ``float`` and ``to``
    make of it; on JAX ``jax.device_get``) converts as on a GPU. On TensorFlow, whose tensors
    convert on every device, nothing changes."""
    backend = keras.backend.backend()
    if backend == "torch":
        with _torch_off_the_host():
            yield
    elif backend == "jax":
        with _jax_off_the_host():
            yield
    else:
        yield
