"""Importing lambda_keras before TensorFlow turns TensorFlow's oneDNN CPU kernels on unless the
user chose; a lambda convolution run without them warns once."""

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

from lambda_keras.backend import devices as _devices
from lambda_keras.backend import onednn as _onednn
from lambda_keras.layers import LambdaLayer

ONEDNN = _onednn.VARIABLE


def test_sets_the_variable_only_when_nobody_chose_and_tensorflow_is_not_imported():
    environ = {}
    assert _onednn.prefer_onednn(environ, modules={}, machine="x86_64")
    assert environ == {ONEDNN: "1"}
    for chosen in ("0", "1"):
        environ = {ONEDNN: chosen}
        assert not _onednn.prefer_onednn(environ, modules={}, machine="x86_64")
        assert environ == {ONEDNN: chosen}
    environ = {}
    assert not _onednn.prefer_onednn(environ, modules={"tensorflow": None}, machine="x86_64")
    assert not _onednn.prefer_onednn(environ, modules={}, machine="arm64")  # not measured there
    assert environ == {}


def onednn_in_a_fresh_process(first_import: str, **env) -> str:
    base = {k: v for k, v in os.environ.items() if k != ONEDNN}
    code = (
        f"import {first_import}\n"
        "import lambda_keras, tensorflow\n"
        "from tensorflow.python.util import _pywrap_util_port\n"
        "import os\n"
        f"print(_pywrap_util_port.IsMklEnabled(), os.environ.get({ONEDNN!r}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**base, "KERAS_BACKEND": "tensorflow", "TF_CPP_MIN_LOG_LEVEL": "2", **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return done.stdout.strip().splitlines()[-1]


@pytest.mark.skipif(
    _onednn.prefer_onednn({}, {}) is False, reason="lambda_keras sets the variable on x86 only"
)
def test_tensorflow_imported_after_lambda_keras_runs_onednn_unless_the_user_said_no():
    assert onednn_in_a_fresh_process("lambda_keras") == "True 1"
    assert onednn_in_a_fresh_process("lambda_keras", TF_ENABLE_ONEDNN_OPTS="0") == "False 0"
    # TensorFlow first: its own default for this CPU, the variable untouched.
    assert onednn_in_a_fresh_process("tensorflow").endswith(" None")


@pytest.mark.parametrize("implementation", ["conv", "depthwise", "einsum"])
def test_a_lambda_convolution_without_onednn_warns_once(monkeypatch, implementation):
    monkeypatch.setattr(_devices, "cpu_kind", lambda: "tensorflow_without_onednn")
    monkeypatch.setattr(_devices, "has_accelerator", lambda: False)
    _onednn.warn_slow_convolutions.cache_clear()
    x = np.zeros((1, 6, 6, 8), "float32")
    layer = LambdaLayer(8, key_dim=4, num_heads=2, scope_size=3, implementation=implementation)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        layer(x)
        layer(x)
    messages = [str(w.message) for w in caught if w.category is RuntimeWarning]
    if implementation == "einsum":
        assert messages == []
    else:
        assert len(messages) == 1 and f"{ONEDNN}=1" in messages[0], messages
    _onednn.warn_slow_convolutions.cache_clear()


def test_no_warning_where_onednn_runs(monkeypatch):
    monkeypatch.setattr(_devices, "cpu_kind", lambda: "tensorflow")
    monkeypatch.setattr(_devices, "has_accelerator", lambda: False)
    _onednn.warn_slow_convolutions.cache_clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        LambdaLayer(8, key_dim=4, num_heads=2, scope_size=3, implementation="conv")(
            np.zeros((1, 6, 6, 8), "float32")
        )
    assert not [w for w in caught if w.category is RuntimeWarning]
