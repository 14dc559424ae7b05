"""Every zoo model converts to LiteRT and ONNX and gives Keras' logits there (``-m slow``).

Needs ``ai-edge-litert`` (LiteRT interpreter; Keras' ``format="litert"`` export), ``tf2onnx``,
``onnx`` and ``onnxruntime`` (Keras' ``format="onnx"`` export): ``pip install ai-edge-litert
tf2onnx onnx onnxruntime``. Each model at its narrowest width, 64x64, 10 classes, logits.
"""

import importlib.util

import numpy as np
import pytest

from lambda_keras import zoo
from tests.zoo.model_harness import small_kwargs

FORMATS = {
    "litert": ("ai_edge_litert",),
    "onnx": ("tf2onnx", "onnx", "onnxruntime"),
}


def run_litert(path, x):
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=str(path))
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
    interpreter.invoke()
    return interpreter.get_tensor(interpreter.get_output_details()[0]["index"])


def run_onnx(path, x):
    import onnxruntime

    session = onnxruntime.InferenceSession(str(path))
    return session.run(None, {session.get_inputs()[0].name: x})[0]


@pytest.mark.slow
@pytest.mark.parametrize("fmt", list(FORMATS))
@pytest.mark.parametrize("name", zoo.list_models())
def test_converted_model_gives_keras_logits(name, fmt, tmp_path):
    missing = [m for m in FORMATS[fmt] if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"{fmt} export needs {missing}")
    model = zoo.get_model(
        name, input_shape=(64, 64, 3), classes=10, classifier_activation=None, **small_kwargs(name)
    )
    x = np.random.default_rng(0).normal(size=(1, 64, 64, 3)).astype("float32")
    expected = np.asarray(model(x, training=False))
    path = tmp_path / f"{name}.{'tflite' if fmt == 'litert' else 'onnx'}"
    model.export(str(path), format=fmt, verbose=False)
    actual = run_litert(path, x) if fmt == "litert" else run_onnx(path, x)
    assert actual.shape == expected.shape
    np.testing.assert_allclose(
        actual, expected, rtol=0, atol=1e-4 * max(1.0, np.abs(expected).max())
    )
