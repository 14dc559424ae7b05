"""CompileReport: one line per compiled graph with its seconds, one when a step runs eagerly or
without the CUDA graphs its mode asked for, one for glibc's heap settings where a compiled step
made them, nothing for Keras' own step functions."""

from types import SimpleNamespace

import keras
import numpy as np
import pytest

from lambda_keras.backend import glibc_heap
from lambda_keras.backend.compile_report import CompileReport
from lambda_keras.zoo import ZooModel


@pytest.fixture(autouse=True)
def glibc_untouched(monkeypatch):
    """A process whose compiled steps set nothing in glibc (one that compiled on a CPU did)."""
    monkeypatch.setattr(glibc_heap, "_applied", None)


def report(model):
    lines = []
    callback = CompileReport(print_fn=lines.append)
    callback.set_model(model)
    return callback, lines


def small_model():
    inputs = keras.Input((3,))
    model = keras.Model(inputs, keras.layers.Dense(2)(inputs), name="small")
    model.compile("sgd", "mse")
    return model


def test_each_new_graph_is_reported_once_with_its_seconds():
    model = small_model()
    step = SimpleNamespace(compile_seconds=[], mode="default", eager_reason=None)
    model.train_function = step
    callback, lines = report(model)
    callback.on_train_batch_end(0)
    assert lines == []  # nothing compiled yet
    step.compile_seconds.append(12.34)
    callback.on_train_batch_end(0)
    callback.on_train_batch_end(1)
    assert lines == ["small: compiled the train step (graph 1, torch.compile mode 'default') in "
                     "12.3 s"]
    step.compile_seconds.append(2.0)  # a partial last batch: a new signature
    callback.on_train_batch_end(2)
    assert lines[1:] == ["small: compiled the train step (graph 2, torch.compile mode 'default') "
                         "in 2.0 s"]


def test_a_step_that_runs_eagerly_says_why_once():
    model = small_model()
    model.predict_function = SimpleNamespace(
        compile_seconds=[], mode="default", eager_reason="GuardOnDataDependentSymNode: u2"
    )
    callback, lines = report(model)
    for batch in range(3):
        callback.on_predict_batch_end(batch)
    assert lines == ["small: the predict step runs eagerly: GuardOnDataDependentSymNode: u2"]


def test_a_new_step_function_is_reported_from_its_first_graph():
    model = small_model()
    model.train_function = SimpleNamespace(compile_seconds=[3.0], mode="default", eager_reason=None)
    callback, lines = report(model)
    callback.on_train_batch_end(0)
    # model.compile() again: a new step function, whose first graph is news
    model.train_function = SimpleNamespace(compile_seconds=[4.0], mode="default", eager_reason=None)
    callback.on_train_batch_end(0)
    assert [line.split(" in ")[-1] for line in lines] == ["3.0 s", "4.0 s"]


def test_keras_own_steps_print_nothing():
    """A model with compiled steps whose steps are Keras' own (``jit_compile=False``; on
    TensorFlow and JAX always)."""
    inputs = keras.Input((3,))
    model = ZooModel(inputs, keras.layers.Dense(2)(inputs))
    model.compile("sgd", "mse", jit_compile=False)
    lines = []
    x, y = np.zeros((4, 3), "float32"), np.zeros((4, 2), "float32")
    model.fit(x, y, epochs=1, verbose=0, callbacks=[CompileReport(print_fn=lines.append)],
              validation_data=(x, y))
    assert lines == []


def test_a_step_compiled_again_without_cuda_graphs_says_why_once():
    model = small_model()
    step = SimpleNamespace(
        compile_seconds=[50.0], mode="default", eager_reason=None,
        cuda_graphs_reason="mode 'reduce-overhead': Unsupported: Attempt to trace generator",
    )
    model.train_function = step
    callback, lines = report(model)
    for batch in range(3):
        callback.on_train_batch_end(batch)
    assert lines == [
        "small: the train step runs without CUDA graphs: mode 'reduce-overhead': Unsupported: "
        "Attempt to trace generator",
        "small: compiled the train step (graph 1, torch.compile mode 'default') in 50.0 s",
    ]


@pytest.mark.parametrize("kept", [True, False])
def test_glibc_s_heap_settings_are_reported_once_where_a_step_kept_them(monkeypatch, kept):
    """The settings are the process's (another model's step may have made them): a step that
    did not keep its buffers in glibc's heap (on a GPU, switched off) prints nothing of them."""
    model = small_model()
    step = SimpleNamespace(compile_seconds=[], mode="default", eager_reason=None)
    model.train_function = step
    callback, lines = report(model)
    monkeypatch.setattr(glibc_heap, "_applied", {"M_MMAP_MAX": 0, "M_TRIM_THRESHOLD": 2**31 - 1})
    callback.on_train_batch_end(0)
    assert lines == []  # nothing compiled yet
    step.compile_seconds.append(7.0)
    step.glibc_heap = kept
    for batch in range(3):
        callback.on_train_batch_end(batch)
    step.compile_seconds.append(1.0)
    callback.on_train_batch_end(3)
    heap = (
        "lambda_keras: glibc keeps the buffers it frees, and up to 2 GiB of free memory, in its "
        "heap for the compiled steps on this CPU (LAMBDA_KERAS_GLIBC_HEAP=0 leaves it alone)"
    )
    assert [line for line in lines if "glibc" in line] == ([heap] if kept else [])
    assert len(lines) == 2 + kept and "graph 2" in lines[-1]
