"""Keras' initializers on the host while the project builds on JAX
(lambda_keras/backend/host_initializers.py): Keras' distributions and constants, reproducible
under Keras' seed, zeros where weights follow, nothing compiled, Keras' own functions back after
the block and everywhere else. Runs in the JAX child of tests/test_backends.py; the check that
other backends keep Keras' initializers runs everywhere."""

import contextlib

import keras
import numpy as np
import pytest
from keras.src.initializers import constant_initializers, random_initializers

from lambda_keras.backend.host_initializers import initial_values_on_host

on_jax = pytest.mark.backends("jax")


def _compiles():
    """A counter of the XLA compiles JAX makes from now on."""
    from jax import monitoring

    counter = [0]

    def count(event, duration, **kwargs):
        if event == "/jax/core/compile/backend_compile_duration":
            counter[0] += 1

    monitoring.register_event_duration_secs_listener(count)
    return counter


def _values(initializer, shape=(64, 48, 3, 3), overwritten=False, dtype="float32"):
    with initial_values_on_host(overwritten=overwritten):
        variable = keras.Variable(initializer, shape=shape, dtype=dtype)
    return keras.ops.convert_to_numpy(variable).astype("float64")


@on_jax
@pytest.mark.parametrize(
    "initializer, stddev, bound",
    [  # fan_in of (64, 48, 3, 3) as a Keras kernel [h, w, in, out]: 64 * 48 * 3
        (keras.initializers.HeNormal(seed=3), np.sqrt(2 / 9216), 2 * np.sqrt(2 / 9216) / 0.8796),
        (keras.initializers.TruncatedNormal(0.0, 0.5, seed=3), 0.5 * 0.8796, 1.0),
        (keras.initializers.RandomNormal(0.0, 0.5, seed=3), 0.5, None),
        (keras.initializers.GlorotUniform(seed=3), np.sqrt(2 / 18432), np.sqrt(6 / 18432)),
        (keras.initializers.RandomUniform(-0.3, 0.3, seed=3), 0.3 / np.sqrt(3), 0.3),
    ],
)
def test_random_initializers_draw_keras_distributions(initializer, stddev, bound):
    """Mean 0, Keras' standard deviation (a truncated normal at two deviations has 0.88 of
    its scale), within its bounds."""
    values = _values(initializer)
    assert abs(values.mean()) < 5 * stddev / np.sqrt(values.size)
    np.testing.assert_allclose(values.std(), stddev, rtol=0.03)
    if bound is not None:
        assert np.abs(values).max() <= bound * (1 + 1e-6)
        assert np.abs(values).max() > 0.9 * bound  # the truncation is reached, not narrower


@on_jax
def test_a_build_is_reproducible_under_keras_seed_and_zeros_where_weights_follow():
    def build(overwritten=False):
        keras.utils.set_random_seed(7)
        with initial_values_on_host(overwritten=overwritten):
            layer = keras.layers.Conv2D(5, 3)
            layer.build((None, 9, 7, 4))
        return [keras.ops.convert_to_numpy(w) for w in layer.weights]

    first, again, zeros = build(), build(), build(overwritten=True)
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a, b)
    assert np.abs(first[0]).max() > 0 and not zeros[0].any() and not zeros[1].any()
    keras.utils.set_random_seed(8)
    with initial_values_on_host():
        other = keras.layers.Conv2D(5, 3)
        other.build((None, 9, 7, 4))
    assert not np.array_equal(keras.ops.convert_to_numpy(other.kernel), first[0])


@on_jax
def test_constant_initializers_give_keras_values_in_each_dtype():
    for dtype in ("float32", "bfloat16", "int32"):
        assert (_values("zeros", (3, 5), dtype=dtype) == 0).all()
        assert (_values("ones", (3, 5), dtype=dtype) == 1).all()
    np.testing.assert_array_equal(_values(keras.initializers.Constant(2.5), (2, 3)), 2.5)
    row = keras.initializers.Constant([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(_values(row, (2, 3)), [[1, 2, 3], [1, 2, 3]])
    assert _values("ones", (2,), overwritten=True).tolist() == [1, 1]  # constants stay


@on_jax
def test_nothing_compiles_in_the_block_and_keras_functions_come_back():
    with initial_values_on_host():  # the seeds' conversion compiles once per process
        keras.layers.Dense(2).build((None, 2))
    compiles = _compiles()
    keras_random = random_initializers.random
    keras_zeros = constant_initializers.Zeros.__call__
    with initial_values_on_host():
        layer = keras.layers.Conv2D(7, 5, use_bias=True)  # shapes no test used before
        layer.build((None, 11, 13, 29))
        norm = keras.layers.BatchNormalization()
        norm.build((None, 31))
        with initial_values_on_host(overwritten=True):  # nested: the outer setting holds
            inner = keras.layers.Dense(37)
            inner.build((None, 41))
    assert compiles[0] == 0
    assert np.abs(keras.ops.convert_to_numpy(inner.kernel)).max() > 0
    assert random_initializers.random is keras_random
    assert constant_initializers.Zeros.__call__ is keras_zeros


@on_jax
def test_another_thread_and_traced_initialisation_keep_keras_initializers():
    """A block is this thread's: a build in another thread meanwhile, and an initializer under
    jax.jit (Keras' sharded initialisation on many devices), get Keras' own values."""
    import concurrent.futures

    import jax

    def kernel():
        layer = keras.layers.Dense(5, kernel_initializer=keras.initializers.HeNormal(seed=11))
        layer.build((None, 7))
        return keras.ops.convert_to_numpy(layer.kernel)

    keras_own = kernel()
    jitted = jax.jit(keras.initializers.GlorotUniform(seed=3).__call__, static_argnums=(0, 1))
    with initial_values_on_host(overwritten=True):
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            elsewhere = pool.submit(kernel).result()
        traced = jitted((4, 6), "float32")
        here = kernel()
    np.testing.assert_array_equal(elsewhere, keras_own)
    np.testing.assert_array_equal(traced, jitted((4, 6), "float32"))
    assert np.abs(keras.ops.convert_to_numpy(traced)).max() > 0
    assert not here.any()  # this thread's block: zeros, a weights file follows
    np.testing.assert_array_equal(kernel(), keras_own)


@on_jax
def test_integer_dtypes_get_keras_own_answer():
    for block in (contextlib.nullcontext(), initial_values_on_host()):
        with block, pytest.raises(ValueError, match="must be a float dtype, got int32"):
            keras.Variable(keras.initializers.RandomUniform(0, 9, seed=1), (3,), dtype="int32")


@on_jax
def test_the_zoo_and_the_mask_rcnn_build_without_compiling():
    """Before: ResNetRS50 79 compiles, the converted Mask R-CNN 865 (its eager build call)."""
    from lambda_keras import zoo
    from tests.detection.tiny import tiny_backbone, tiny_detector

    compiles = _compiles()
    zoo.ResNetRS50(input_shape=(64, 64, 3), classes=7)
    with initial_values_on_host():  # the test's own backbone; the heads: MaskRCNN.build's
        backbone = tiny_backbone(channels=6)
    tiny_detector(backbone, fpn_channels=24)  # built by a traced call on JAX
    assert compiles[0] <= 2  # a dtype conversion, once per shape


@on_jax
def test_a_saved_zoo_model_loads_without_compiling(tmp_path):
    """``keras.saving.load_model`` rebuilds a zoo model from its configuration before it loads
    the weights: before, 82 compiles for a LambdaResNet-50 at width 0.125 (15.8 s of it on a
    2-core CPU, 1.7 s after)."""
    from lambda_keras import zoo

    model = zoo.LambdaResNet50(
        width_multiplier=0.125, input_shape=(32, 32, 3), classes=4, weights=None
    )
    model.save(tmp_path / "model.keras")
    compiles = _compiles()
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    assert compiles[0] <= 2  # a dtype conversion, once per shape
    assert type(loaded) is zoo.ZooModel
    for mine, saved in zip(loaded.weights, model.weights, strict=True):
        np.testing.assert_array_equal(mine.numpy(), saved.numpy(), err_msg=saved.path)


@pytest.mark.backends("tensorflow", "torch")
def test_other_backends_keep_keras_initializers():
    keras_random = random_initializers.random
    with initial_values_on_host():
        assert random_initializers.random is keras_random
        layer = keras.layers.Dense(3)
        layer.build((None, 2))
    assert layer.kernel.shape == (2, 3)


def test_a_setting_that_is_not_a_bool_is_refused_before_anything_changes():
    keras_random = random_initializers.random
    with pytest.raises(TypeError, match="`overwritten` must be True or False; received "):
        with initial_values_on_host(overwritten="yes"):
            pass
    assert random_initializers.random is keras_random
