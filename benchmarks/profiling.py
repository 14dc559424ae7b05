"""Peak memory and time of one layer call, measured in a fresh child process.

TensorFlow's allocator statistics (``tf.config.experimental.get_memory_info``) exist only where
oneDNN is on, which TensorFlow enables by default only on CPUs with AVX-512; JAX and PyTorch
have their own counters. The resident memory of a process is there on every CPU and backend:
``measure_layer_call`` builds the layer in a fresh child
process, traces or compiles its call without executing it, then reports how far the resident set
rose during the first execution (frameworks keep freed memory in pools, so a later call would reuse
it unseen) and
how long a second execution took.

The figure is the memory the operating system had to give the call: it includes the framework's
temporaries and any allocator slack, and is comparable between layers, implementations and
backends measured this way, not with allocator-counter figures. On Linux the peak is exact
(``VmHWM`` reset through ``/proc/self/clear_refs``); elsewhere it is the process's lifetime
peak (``ru_maxrss``) above the peak before the first execution.
"""

from __future__ import annotations

import ctypes
import dataclasses
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable

import numpy as np

__all__ = ["Measurement", "layer_step", "measure_layer_call"]

MIB = 2**20


@dataclasses.dataclass(frozen=True)
class Measurement:
    """One measured call: the resident memory it added at its peak (MiB) and its time (s)."""

    peak_mib: float
    seconds: float


def measure_layer_call(
    layer_config: dict,
    input_shape: tuple[int, ...],
    *,
    training: bool = False,
    backward: bool = False,
    inputs: int = 1,
    timeout: float = 600.0,
    backend: str | None = None,
) -> Measurement:
    """Peak memory and time of calling a layer, measured in a fresh child process.

    Args:
        layer_config: The layer as ``keras.saving.serialize_keras_object(layer)`` gives it
            (a layer of ``lambda_keras`` or of Keras; it is rebuilt in the child).
        input_shape: Shape of the random float32 input, e.g. ``[batch, height, width,
            channels]``.
        training: Call the layer in training mode (batch-norm statistics of the batch).
        backward: Measure the forward pass and the gradients of ``sum(y**2)`` with respect to
            the input and the trainable weights (TensorFlow, JAX or PyTorch backend).
        inputs: How many times the input is passed: 2 for a self-attention
            ``keras.layers.MultiHeadAttention`` (query and value).
        timeout: Seconds before the child is stopped.
        backend: The child's Keras backend (``"tensorflow"``, ``"jax"`` or ``"torch"``);
            None: the caller's ``KERAS_BACKEND`` (Keras' default when unset).

    Returns:
        A ``Measurement``: the peak of the first execution, the
        time of the second.

    Raises:
        TypeError: ``layer_config`` is not a dict or ``input_shape`` not a tuple of positive ints.
        RuntimeError: the child failed (its error is in the message) or timed out.
    """
    if not isinstance(layer_config, dict):
        raise TypeError(
            "`layer_config` must be a dict from keras.saving.serialize_keras_object(layer); "
            f"received {type(layer_config).__name__}."
        )
    shape = tuple(input_shape) if isinstance(input_shape, (tuple, list)) else None
    if not shape or not all(isinstance(s, int) and s > 0 for s in shape):
        raise TypeError(
            f"`input_shape` must be a tuple of positive ints; received input_shape={input_shape!r}."
        )
    if isinstance(inputs, bool) or not isinstance(inputs, int) or inputs < 1:
        raise TypeError(f"`inputs` must be a positive int; received inputs={inputs!r}.")
    if backend not in (None, *BACKENDS):
        raise ValueError(f"`backend` must be one of {BACKENDS} or None; received {backend!r}.")
    env = dict(os.environ)
    if backend is not None:
        env["KERAS_BACKEND"] = backend
    request = json.dumps(
        {
            "layer": layer_config,
            "shape": shape,
            "training": bool(training),
            "backward": bool(backward),
            "inputs": inputs,
        }
    )
    try:
        # A fresh interpreter, not multiprocessing: nothing of the caller's __main__ re-runs,
        # and no multi-threaded framework is forked.
        done = subprocess.run(
            [sys.executable, os.path.abspath(__file__)],
            input=request,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
        )
    except subprocess.TimeoutExpired as err:
        raise RuntimeError(f"The measurement child process took over {timeout:.0f} s.") from err
    result = done.stdout.strip().splitlines()[-1:] if done.returncode == 0 else []
    if not result or not result[0].startswith(_RESULT):
        raise RuntimeError(
            f"The measurement child process failed (exit {done.returncode}): "
            f"{done.stderr.strip()[-2000:]}"
        )
    peak_mib, seconds = json.loads(result[0].removeprefix(_RESULT))
    return Measurement(peak_mib, seconds)


_RESULT = "measurement: "
BACKENDS = ("tensorflow", "jax", "torch")


def _child(request: dict) -> Measurement:
    prepare, run = layer_step(
        request["layer"],
        tuple(request["shape"]),
        training=request["training"],
        backward=request["backward"],
        inputs=request["inputs"],
    )
    # Frameworks keep freed memory in their own pools, so only a first execution shows what
    # a call needs: trace/compile without executing, measure the first run, time the second.
    prepare()
    _release_free_memory()
    before = _reset_peak()
    run()
    peak_mib = (_peak_bytes() - before) / MIB
    start = time.perf_counter()
    run()
    return Measurement(peak_mib, time.perf_counter() - start)


def layer_step(
    layer_config: dict,
    input_shape: tuple[int, ...],
    *,
    training: bool = False,
    backward: bool = False,
    inputs: int = 1,
) -> tuple[Callable[[], object], Callable[[], object]]:
    """One compiled call of a layer on this process's Keras backend, for timing it here.

    The layer is rebuilt from ``layer_config`` on a random float32 input of ``input_shape``
    (e.g. ``[batch, height, width, channels]``); the arguments mean what they mean for
    ``measure_layer_call``. TensorFlow: a ``tf.function``
    without XLA; JAX: ``jax.jit`` of the layer's stateless call (and ``jax.grad``); PyTorch: eager.

    Returns:
        ``(prepare, run)``: ``prepare()`` traces or compiles without executing; ``run()``
        calls the layer once (forward, or forward and backward) and waits for the result.
    """
    import keras

    import lambda_keras  # noqa: F401  registers the project's layers for deserialization

    shape = tuple(input_shape)

    layer = keras.saving.deserialize_keras_object(layer_config)
    layer(*[keras.KerasTensor(shape)] * inputs)  # builds the weights, executes nothing
    x = np.random.default_rng(0).normal(size=shape).astype("float32")

    def call(t, **kwargs):
        return layer(*[t] * inputs, training=training, **kwargs)

    backend = keras.backend.backend()
    if backend == "tensorflow":
        return _tensorflow_step(layer, call, x, backward)
    if backend == "jax":
        return _jax_step(layer, x, training, backward, inputs)
    if backend == "torch":
        return _torch_step(layer, call, x, backward)
    raise ValueError(
        f"layer_step supports the tensorflow, jax and torch backends; the Keras backend is "
        f"{backend!r}."
    )


def _tensorflow_step(layer, call, x, backward):
    import tensorflow as tf

    x = tf.constant(x)

    @tf.function(jit_compile=False)
    def step():
        if not backward:
            return [call(x)]
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_sum(tf.cast(call(x), "float32") ** 2)
        return tape.gradient(loss, [x, *layer.trainable_variables])

    return step.get_concrete_function, lambda: [t.numpy() for t in step()]


def _jax_step(layer, x, training, backward, inputs):
    import jax
    import jax.numpy as jnp

    trainable = [v.value for v in layer.trainable_variables]
    non_trainable = [v.value for v in layer.non_trainable_variables]

    def loss(weights, t):
        args = [t] * inputs
        y, _ = layer.stateless_call(weights, non_trainable, *args, training=training)
        return jnp.sum(jnp.asarray(y, "float32") ** 2), y

    if backward:
        step = jax.jit(jax.grad(loss, argnums=(0, 1), has_aux=True))
    else:
        step = jax.jit(lambda w, t: loss(w, t)[1])
    x = jnp.asarray(x)
    compiled = []

    def prepare():
        compiled.append(step.lower(trainable, x).compile())

    return prepare, lambda: jax.block_until_ready(compiled[0](trainable, x))


def _torch_step(layer, call, x, backward):
    import torch
    from keras.src.backend.torch.core import get_device
    from timing import synchronized

    x = torch.tensor(x, requires_grad=backward, device=get_device())  # on Keras' device

    def step():
        if not backward:
            with torch.no_grad():
                return call(x)
        layer.zero_grad()
        x.grad = None
        (call(x).float() ** 2).sum().backward()

    return (lambda: None), synchronized(step)  # the GPU's work done when the call returns


def _release_free_memory() -> None:
    """Hand memory glibc's allocator keeps after building and tracing back to the system, so
    the measured call's pages are counted rather than reused unseen."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL("libc.so.6").malloc_trim(0)
        except (OSError, AttributeError):  # not glibc
            pass


def _reset_peak() -> int:
    """Reset the peak resident set to the current one where the system allows it (Linux);
    returns the resident bytes to measure from."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return _status_bytes("VmRSS")
    except OSError:
        return _peak_bytes()


def _peak_bytes() -> int:
    if os.path.exists("/proc/self/status"):
        return _status_bytes("VmHWM")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # bytes on macOS, KiB elsewhere


def _status_bytes(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise OSError(f"/proc/self/status has no {field}")


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    measured = _child(json.loads(sys.stdin.read()))
    print(_RESULT + json.dumps([measured.peak_mib, measured.seconds]))
