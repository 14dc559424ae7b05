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
