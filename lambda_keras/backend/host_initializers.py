"""Keras' initializers computed on the host (NumPy) while the project builds a model on JAX.

On Keras' JAX backend every initializer runs eagerly, and JAX compiles each eager operation for
its shapes: a truncated normal, a multiply and an add per kernel shape, a broadcast per
``zeros`` / ``ones`` shape. Building ``ResNetRS50()`` compiled 79 programs (5.2 of its 6.7 s on a
2-core CPU), the converted Mask R-CNN's weights about 100. With NumPy the values take
milliseconds and reach the device as one copy each (no compile).

Within [`initial_values_on_host`][lambda_keras.backend.host_initializers.initial_values_on_host],
on JAX only, Keras' constant initializers (``Zeros``, ``Ones``, ``Constant``) give the same values
from NumPy, and its random ones (``RandomNormal``, ``TruncatedNormal``, ``RandomUniform`` and the
``VarianceScaling`` family: He, Glorot, LeCun) draw the same distributions (truncated at two
standard deviations, as Keras') from a NumPy generator seeded by Keras' own seed (the
initializer's, or Keras' global seed generator, so ``keras.utils.set_random_seed`` still makes a
build reproducible). Where a weights file replaces the values at once (``overwritten=True``), the
random initializers give zeros: no draw at all. Keras' own code computes the parameters (fans,
scales); only the draws move to the host.

The project's builders use it (the zoo's, the Mask R-CNN's), and so does loading a saved zoo
model (``ZooModel.from_config``); a user's own Keras model built
outside them is initialised by Keras as before, in every thread. Keras' own functions run where
a value is traced (a symbolic build reading an uninitialised variable, Keras' sharded
initialisation under ``jax.jit`` on many devices) and for integer dtypes. TensorFlow and
PyTorch initialise eagerly without compiling, and keep Keras' initializers.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import keras
import numpy as np

__all__ = ["initial_values_on_host"]

_setting = threading.local()  # .overwritten: this thread's block's setting, None outside one
_lock = threading.Lock()
_installed = {"blocks": 0, "keras": {}}  # blocks open in the process; Keras' own, while patched


def _host_setting() -> bool | None:
    """``overwritten`` of this thread's block, or None where Keras' own initializers run:
    outside a block, in a stateless scope or a JAX trace (a traced value: nothing compiles)."""
    overwritten = getattr(_setting, "overwritten", None)
    if overwritten is None:
        return None
    from keras.src.backend.common.stateless_scope import in_stateless_scope
    from keras.src.utils.jax_utils import is_in_jax_tracing_scope

    return None if in_stateless_scope() or is_in_jax_tracing_scope() else overwritten


class _Delegate:
    """A module's stand-in: the functions given, everything else from the module."""

    def __init__(self, module, **functions):
        self._module = module
        self.__dict__.update(functions)

    def __getattr__(self, name):
        return getattr(self._module, name)


def _numpy_dtype(dtype) -> np.dtype:
    import jax.numpy as jnp

    return np.dtype(jnp.dtype(keras.backend.standardize_dtype(dtype)))  # bfloat16 included


def _generator(seed) -> np.random.Generator:
    """A NumPy generator from Keras' seed (drawn as Keras' own initializer would draw it)."""
    from keras.src.random.seed_generator import draw_seed

    key = keras.ops.convert_to_numpy(draw_seed(seed))
    return np.random.default_rng(key.astype(np.uint64).ravel().tolist())


def _truncated(generator: np.random.Generator, shape) -> np.ndarray:
    """Standard normal draws redrawn until within two standard deviations (Keras' truncation)."""
    values = generator.standard_normal(shape)
    outside = np.abs(values) > 2.0
    while outside.any():
        values[outside] = generator.standard_normal(int(outside.sum()))
        outside = np.abs(values) > 2.0
    return values


def _on_device(values: np.ndarray):
    """One copy to the device: ``jax.device_put``, where Keras' ``jnp.asarray`` of a NumPy array
    compiles a program per shape (JAX 0.10: ``lax.stage``)."""
    import jax

    return jax.device_put(values)


def _random_functions(keras_random) -> dict:
    """Host versions of Keras' backend ``normal``, ``truncated_normal`` and ``uniform``, Keras'
    own where ``_host_setting`` says so or the dtype is not a float (Keras refuses those)."""

    def draw(name, shape, seed, dtype, sample, **parameters):
        overwritten = _host_setting()
        dtype = keras.backend.standardize_dtype(dtype)
        if overwritten is None or "float" not in dtype:
            return getattr(keras_random, name)(shape, dtype=dtype, seed=seed, **parameters)
        generator = _generator(seed)  # drawn even when unused: Keras' seed sequence stays
        values = np.zeros(shape) if overwritten else sample(generator, tuple(shape))
        return _on_device(values.astype(_numpy_dtype(dtype)))

    def normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
        def sample(g, s):
            return g.standard_normal(s) * stddev + mean

        return draw("normal", shape, seed, dtype, sample, mean=mean, stddev=stddev)

    def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
        def sample(g, s):
            return _truncated(g, s) * stddev + mean

        return draw("truncated_normal", shape, seed, dtype, sample, mean=mean, stddev=stddev)

    def uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
        def sample(g, s):
            return g.uniform(minval, maxval, s)

        return draw("uniform", shape, seed, dtype, sample, minval=minval, maxval=maxval)

    return {"normal": normal, "truncated_normal": truncated_normal, "uniform": uniform}


def _constant_calls(keras_calls: dict) -> dict:
    """Host versions of the constant initializers' ``__call__``, by class (Keras' own where
    ``_host_setting`` says so)."""
    from keras.src.initializers import constant_initializers as constant

    def zeros(self, shape, dtype):
        return np.zeros(shape, _numpy_dtype(dtype))

    def ones(self, shape, dtype):
        return np.ones(shape, _numpy_dtype(dtype))

    def constant_value(self, shape, dtype):  # Keras': value * ones(shape)
        value = np.asarray(keras.ops.convert_to_numpy(self.value), _numpy_dtype(dtype))
        return value * np.ones(shape, value.dtype)

    def host(cls, values):
        def call(self, shape, dtype=None):
            if _host_setting() is None:
                return keras_calls[cls](self, shape, dtype)
            return _on_device(values(self, shape, dtype))

        return call

    return {
        cls: host(cls, values)
        for cls, values in (
            (constant.Zeros, zeros),
            (constant.Ones, ones),
            (constant.Constant, constant_value),
        )
    }


def _install() -> None:
    """Keras' initializers' functions replaced by the host versions (which hand every call
    outside a block back to Keras), while any thread has a block open."""
    from keras.src.initializers import constant_initializers, random_initializers

    with _lock:
        _installed["blocks"] += 1
        if _installed["blocks"] > 1:
            return
        keras_random = random_initializers.random
        classes = (constant_initializers.Zeros, constant_initializers.Ones)
        classes += (constant_initializers.Constant,)
        keras_calls = {cls: cls.__dict__["__call__"] for cls in classes}
        _installed["keras"] = {"random": keras_random, "calls": keras_calls}
        random_initializers.random = _Delegate(keras_random, **_random_functions(keras_random))
        for cls, call in _constant_calls(keras_calls).items():
            cls.__call__ = call


def _uninstall() -> None:
    from keras.src.initializers import random_initializers

    with _lock:
        _installed["blocks"] -= 1
        if _installed["blocks"]:
            return
        originals, _installed["keras"] = _installed["keras"], {}
        random_initializers.random = originals["random"]
        for cls, call in originals["calls"].items():
            cls.__call__ = call


@contextlib.contextmanager
def initial_values_on_host(overwritten: bool = False) -> Iterator[None]:
    """Keras' built-in initializers compute on the host within the block, on the JAX backend.

    Args:
        overwritten: bool. The values are replaced at once (a weights file is loaded right
            after the build): random initializers give zeros instead of drawing. Defaults to
            `False`.

    Nested blocks keep the outermost block's setting; the setting is this thread's (another
    thread's builds keep Keras' initializers). Elsewhere than JAX, nothing changes.

    Examples:
        >>> import keras
        >>> from lambda_keras.backend.host_initializers import initial_values_on_host
        >>> with initial_values_on_host():
        ...     layer = keras.layers.Dense(4)
        ...     layer.build((None, 3))
        >>> tuple(layer.kernel.shape)
        (3, 4)
    """
    if not isinstance(overwritten, bool):
        raise TypeError(
            f"`overwritten` must be True or False; received overwritten={overwritten!r} "
            f"({type(overwritten).__name__})."
        )
    if keras.backend.backend() != "jax" or getattr(_setting, "overwritten", None) is not None:
        yield
        return
    _install()
    try:
        _setting.overwritten = overwritten
        yield
    finally:
        _setting.overwritten = None
        _uninstall()
