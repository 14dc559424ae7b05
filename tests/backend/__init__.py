"""What the backend-neutral tests need from the Keras backend they run on.

The layer and zoo tests run on every Keras 3 backend (``KERAS_BACKEND``; see
``tests/test_backends.py``): tensors are read with :func:`numpy` and differentiated with
:func:`gradients`, and a test that needs TensorFlow itself carries ``@pytest.mark.tensorflow``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import keras
import numpy as np

BACKEND = keras.backend.backend()


def computes_float64() -> bool:
    """Whether float64 tensors stay float64: JAX makes them float32 unless ``jax_enable_x64``."""
    if BACKEND != "jax":
        return True
    import jax

    return bool(jax.config.jax_enable_x64)


def numpy(x) -> np.ndarray:
    """A backend tensor, a Keras variable or anything array-like as a NumPy array."""
    if isinstance(x, keras.Variable):
        return np.asarray(x.numpy())
    if hasattr(x, "detach"):  # a PyTorch tensor that may require grad
        x = x.detach().cpu()
    return np.asarray(keras.ops.convert_to_numpy(x))


def gradients(loss: Callable, variables: Sequence[keras.Variable]) -> list[np.ndarray]:
    """The gradient of the scalar ``loss()`` with respect to ``variables``, as NumPy arrays."""
    if BACKEND == "tensorflow":
        import tensorflow as tf

        with tf.GradientTape() as tape:
            value = loss()
        grads = tape.gradient(value, [v.value for v in variables])
        return [numpy(tf.convert_to_tensor(g)) for g in grads]
    if BACKEND == "jax":
        import jax

        StatelessScope = keras.StatelessScope

        def stateless(values):
            with StatelessScope(state_mapping=list(zip(variables, values, strict=True))):
                return loss()

        return [numpy(g) for g in jax.grad(stateless)([v.value for v in variables])]
    if BACKEND == "torch":
        import torch

        value = loss()
        grads = torch.autograd.grad(value, [v.value for v in variables])
        return [numpy(g.detach().cpu()) for g in grads]
    raise NotImplementedError(f"gradients on the {BACKEND} backend")


def compiled(function: Callable) -> Callable:
    """``function`` compiled as the backend compiles a model's step: ``tf.function`` with XLA
    on TensorFlow, ``jax.jit`` on JAX; PyTorch runs it eagerly (what Keras' ``fit`` does there
    unless ``jit_compile=True``)."""
    if BACKEND == "tensorflow":
        import tensorflow as tf

        return tf.function(function, jit_compile=True)
    if BACKEND == "jax":
        import jax

        return jax.jit(function)
    return function


def values_and_gradients(
    losses: Callable[[], dict], variables: Sequence[keras.Variable]
) -> tuple[dict[str, float], list[np.ndarray]]:
    """``losses()``'s values (a dict of scalars) and the gradient of their sum with respect to
    ``variables``, as NumPy; compiled on JAX (``jax.jit``: a whole model op by op is slow)."""
    if BACKEND == "jax":
        import jax

        def total(values):
            with keras.StatelessScope(state_mapping=list(zip(variables, values, strict=True))):
                parts = losses()
            return sum(parts.values()), parts

        step = jax.jit(jax.value_and_grad(total, has_aux=True))
        (_, parts), grads = step([v.value for v in variables])
        return {k: float(numpy(p)) for k, p in parts.items()}, [numpy(g) for g in grads]
    parts = {}

    def total():
        parts.update(losses())
        return sum(parts.values())

    grads = gradients(total, variables)
    return {k: float(numpy(p)) for k, p in parts.items()}, grads


# JAX compiles every eager op for its shapes, and the tests' tensors are tiny: XLA's compile
# time is the cost, not the code it makes (the default child run took 33 s instead of 44 s).
FAST_XLA_COMPILE = "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"


def child_env(backend: str | None = None, **extra: str) -> dict[str, str]:
    """The environment of a child process of the tests: this checkout first on ``PYTHONPATH``
    (before what it held: packages installed with ``--target``, as on a GPU machine),
    TensorFlow quiet, Keras on ``backend`` (None: the child's default)."""
    import os
    from pathlib import Path

    paths = [str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH", "")]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(path for path in paths if path),
        "TF_CPP_MIN_LOG_LEVEL": "2",
        **extra,
    }
    env.pop("KERAS_BACKEND", None)
    if backend is not None:
        env["KERAS_BACKEND"] = backend
    return env


NO_TENSORFLOW = 'import sys\nsys.modules["tensorflow"] = None  # any import of it fails\n'
"""Python that makes ``import tensorflow`` fail (and ``find_spec`` find nothing) in its process:
the first lines of a child that proves it needs no TensorFlow."""


def child_env_without_tensorflow(folder, backend: str | None = None, **extra: str):
    """:func:`child_env` for a process tree in which TensorFlow cannot be imported, as on a GPU
    image without it: a ``sitecustomize`` in ``folder``, first on ``PYTHONPATH``, that every
    process started from it runs (``import tensorflow`` fails, ``find_spec`` finds nothing)."""
    from pathlib import Path

    (Path(folder) / "sitecustomize.py").write_text(NO_TENSORFLOW)
    env = child_env(backend, **extra)
    env["PYTHONPATH"] = f"{folder}:{env['PYTHONPATH']}"
    return env


def run_script_on_jax(script: str, *args: str, devices: int = 2, timeout: int = 1200) -> str:
    """``python scripts/<script> --backend=jax *args`` over ``devices`` CPU devices; returns
    its output (the run must succeed)."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    flags = f"--xla_force_host_platform_device_count={devices} {FAST_XLA_COMPILE}"
    env = child_env(XLA_FLAGS=flags)
    command = [sys.executable, str(root / "scripts" / script), "--backend=jax", *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout
