"""Peak memory of a layer call, measured in a child process on every CPU."""

import sys
from pathlib import Path

import keras
import pytest

from lambda_keras.layers import LambdaLayer

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
from profiling import Measurement, measure_layer_call  # noqa: E402

sys.path.remove(str(BENCHMARKS))


def config(layer):
    return keras.saving.serialize_keras_object(layer)


def test_works_where_tensorflow_keeps_no_allocator_statistics(monkeypatch):
    """With oneDNN off (TensorFlow's default on CPUs without AVX-512) TensorFlow's CPU memory
    counters raise; the child-process measurement does not need them."""
    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", "0")
    attention = keras.layers.MultiHeadAttention(num_heads=4, key_dim=16, attention_axes=(1, 2))
    small = measure_layer_call(config(attention), (2, 16, 16, 64), inputs=2)
    large = measure_layer_call(config(attention), (2, 32, 32, 64), inputs=2)
    assert isinstance(large, Measurement) and large.seconds > 0
    # Attention's maps alone: 2 * 4 * 1024^2 float32 = 32 MiB at 32x32 (2 MiB at 16x16).
    assert large.peak_mib > 32 > small.peak_mib


@pytest.mark.end_to_end  # two child processes; the other tests here measure in one or two
def test_forward_and_backward_of_a_lambda_layer():
    layer = LambdaLayer(64, scope_size=7, implementation="conv")
    forward = measure_layer_call(config(layer), (4, 14, 14, 64), training=True)
    both = measure_layer_call(config(layer), (4, 14, 14, 64), training=True, backward=True)
    assert forward.peak_mib > 0 and both.peak_mib > 0 and both.seconds > 0


def test_a_failing_child_is_an_error_with_its_message():
    bad = config(keras.layers.Dense(4))
    bad["config"]["units"] = -1
    with pytest.raises(RuntimeError, match="child process failed"):
        measure_layer_call(bad, (1, 8))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(layer_config="dense"), "`layer_config` must be a dict"),
        (dict(input_shape=(2, 0, 3)), "`input_shape` must be a tuple of positive ints"),
        (dict(input_shape="2x8"), "`input_shape` must be a tuple of positive ints"),
        (dict(inputs=0), "`inputs` must be a positive int"),
    ],
)
def test_bad_arguments(kwargs, message):
    arguments = dict(layer_config=config(keras.layers.Dense(2)), input_shape=(1, 8))
    with pytest.raises(TypeError, match=message):
        measure_layer_call(**{**arguments, **kwargs})
