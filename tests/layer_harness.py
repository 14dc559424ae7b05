"""One harness for every Keras layer of the package (as keras-hub's ``run_layer_test``): its
config round trip, an eager and a symbolic call that agree on shapes, a ``.keras`` round trip
inside a functional model that gives the same outputs, and mixed precision under the global
``mixed_float16`` policy (float16 outputs, float32 weights)."""

from __future__ import annotations

import keras
import numpy as np

from tests.backend import numpy


def _inputs_like(value, name: str):
    """A ``keras.Input`` of ``value``'s shape (any batch) and dtype."""
    return keras.Input(
        shape=value.shape[1:], dtype=keras.backend.standardize_dtype(value.dtype), name=name
    )


def _shapes(outputs) -> list[tuple]:
    """The shapes of the outputs, in their structure's order."""
    return [tuple(t.shape) for t in keras.tree.flatten(outputs)]


def _float_dtypes(outputs) -> set[str]:
    dtypes = {keras.backend.standardize_dtype(t.dtype) for t in keras.tree.flatten(outputs)}
    return {d for d in dtypes if "float" in d}


def run_layer_test(layer, inputs, tmp_path, call_kwargs: dict | None = None, atol=1e-5):
    """Run the checks; return the eager outputs.

    Args:
        layer: A configured, unbuilt layer.
        inputs: Its first call argument: an array, or a list or dict of arrays, batch first.
        tmp_path: Where the ``.keras`` file goes.
        call_kwargs: Further call arguments, arrays (inputs of the functional model too).
    """
    call_kwargs = call_kwargs or {}
    config = layer.get_config()
    assert type(layer).from_config(config).get_config() == config

    eager = layer(inputs, **call_kwargs)
    if isinstance(inputs, dict):
        symbolic_inputs = {k: _inputs_like(v, k) for k, v in inputs.items()}
    elif isinstance(inputs, (list, tuple)):
        symbolic_inputs = [_inputs_like(v, f"input_{i}") for i, v in enumerate(inputs)]
    else:
        symbolic_inputs = _inputs_like(inputs, "inputs")
    symbolic_kwargs = {k: _inputs_like(v, k) for k, v in call_kwargs.items()}
    symbolic = type(layer).from_config(config)(symbolic_inputs, **symbolic_kwargs)
    assert _shapes(symbolic) == [(None, *shape[1:]) for shape in _shapes(eager)]

    model_inputs = {"inputs": symbolic_inputs, **symbolic_kwargs}
    model = keras.Model(model_inputs, symbolic)
    model_args = {"inputs": inputs, **call_kwargs}
    path = tmp_path / f"{layer.name}.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)
    for before, after in zip(
        keras.tree.flatten(model(model_args)), keras.tree.flatten(loaded(model_args)), strict=True
    ):
        np.testing.assert_allclose(numpy(after), numpy(before), atol=atol)

    # Mixed precision as the trainers set it: the global policy, which the layer's sublayers
    # follow too (a layer's own dtype= argument does not reach its sublayers).
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_float16")
    try:
        mixed = type(layer).from_config({k: v for k, v in config.items() if k != "dtype"})
        outputs = mixed(inputs, **call_kwargs)
    finally:
        keras.config.set_dtype_policy(previous)
    assert _float_dtypes(outputs) <= {"float16"}, _float_dtypes(outputs)
    assert {keras.backend.standardize_dtype(w.dtype) for w in mixed.weights} <= {"float32"}
    return eager
