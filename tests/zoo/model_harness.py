"""One test harness for every zoo model (keras-hub's ``run_vision_backbone_test`` is the model).

:func:`run_model_harness` builds a registered model at a small width and input and checks, each
in a function of its own: symbolic and eager calls, one ``fit`` step, ``get_config`` /
``from_config``, a ``.keras`` round trip with identical outputs, mixed precision, and
``include_top=False`` with every pooling.
"""

from __future__ import annotations

import copy
import inspect

import keras
import numpy as np

from lambda_keras import zoo
from tests.backend import numpy

INPUT_SHAPE = (32, 32, 3)  # the smallest input the /32 models take
POOLING_SHAPE = (64, 64, 3)  # 2x2 final maps: average and max pooling differ
CLASSES = 3


def small_kwargs(name: str) -> dict:
    """The builder's narrowest sensible width: ``width_multiplier`` or ``alpha`` if it has one."""
    accepts = inspect.signature(zoo.model_builder(name)).parameters
    if "width_multiplier" in accepts:
        return {"width_multiplier": 0.125}
    if "alpha" in accepts:
        return {"alpha": 0.35}
    return {}


def build_small(name: str, **kwargs) -> keras.Model:
    kwargs = {"input_shape": INPUT_SHAPE, "classes": CLASSES, **small_kwargs(name), **kwargs}
    return zoo.get_model(name, **kwargs)


def images(shape=INPUT_SHAPE, batch: int = 2, seed: int = 0) -> np.ndarray:
    """ImageNet-normalised random images ``[batch, *shape]``."""
    pixels = np.random.default_rng(seed).uniform(0, 255, size=(batch, *shape))
    return np.asarray(zoo.lambda_resnet.preprocess_input(pixels.astype("float32")))


def check_calls(model: keras.Model) -> np.ndarray:
    """Symbolic and eager calls: shapes, finite probabilities summing to one."""
    symbolic = model(keras.Input(INPUT_SHAPE))
    assert tuple(symbolic.shape) == (None, CLASSES)
    probabilities = numpy(model(images(), training=False))
    assert probabilities.shape == (2, CLASSES)
    assert np.isfinite(probabilities).all()
    np.testing.assert_allclose(probabilities.sum(axis=-1), 1.0, rtol=1e-5)
    return probabilities


def check_config_round_trip(model: keras.Model, expected: np.ndarray) -> None:
    """``from_config(get_config())`` gives the same config and, with the weights, the outputs."""
    config = model.get_config()
    revived = model.__class__.from_config(copy.deepcopy(config))  # from_config consumes it
    assert revived.get_config() == config
    revived.set_weights(model.get_weights())
    np.testing.assert_array_equal(numpy(revived(images(), training=False)), expected)


def check_keras_file_round_trip(model: keras.Model, expected: np.ndarray, tmp_path) -> None:
    """``.keras`` save and load (``safe_mode``): same weights, identical outputs."""
    path = tmp_path / f"{model.name}.keras"
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    for saved, restored in zip(model.weights, loaded.weights, strict=True):
        np.testing.assert_array_equal(numpy(saved), numpy(restored))
    np.testing.assert_array_equal(numpy(loaded(images(), training=False)), expected)


def check_fit_step(model: keras.Model, run_eagerly: bool) -> None:
    """One ``fit`` step: a finite loss, the classifier moves, every weight stays finite."""
    model.compile(
        optimizer=keras.optimizers.SGD(0.1),
        loss=keras.losses.CategoricalCrossentropy(),
        run_eagerly=run_eagerly,
    )
    before = numpy(model.get_layer("predictions").kernel).copy()
    labels = keras.utils.to_categorical([0, 1], CLASSES)
    history = model.fit(images(), labels, batch_size=2, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    assert not np.array_equal(numpy(model.get_layer("predictions").kernel), before)
    assert all(np.isfinite(numpy(w)).all() for w in model.weights)


def check_mixed_precision(name: str) -> None:
    """Under ``mixed_float16`` the body computes in float16, the classifier in float32."""
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_float16")
    try:
        model = build_small(name)
        compute_dtypes = {layer.compute_dtype for layer in model.layers[1:-1]}
        assert "float16" in compute_dtypes
        assert model.get_layer("predictions").compute_dtype == "float32"
        assert all(w.dtype == "float32" for w in model.weights)
        probabilities = model(images(), training=False)
        assert keras.backend.standardize_dtype(probabilities.dtype) == "float32"
        assert np.isfinite(numpy(probabilities)).all()
    finally:
        keras.config.set_dtype_policy(previous)


def check_poolings(name: str) -> None:
    """``include_top=False``: the final map (``pooling=None``), and its average and maximum."""
    kwargs = {"include_top": False, "input_shape": POOLING_SHAPE}
    features_model = build_small(name, **kwargs)
    features = numpy(features_model(images(POOLING_SHAPE), training=False))
    assert features.shape[:3] == (2, 2, 2)
    assert features_model.output.shape[-1] == features.shape[-1]
    for pooling, reduce in (("avg", np.mean), ("max", np.max)):
        pooled_model = build_small(name, pooling=pooling, **kwargs)
        assert tuple(pooled_model.output.shape) == (None, features.shape[-1])
        pooled_model.set_weights(features_model.get_weights())
        pooled = numpy(pooled_model(images(POOLING_SHAPE), training=False))
        np.testing.assert_allclose(pooled, reduce(features, axis=(1, 2)), rtol=1e-5, atol=1e-6)


def run_model_harness(name: str, tmp_path, *, run_eagerly: bool = False) -> None:
    """Every check, on the registered model ``name`` at a small width and input."""
    model = build_small(name)
    probabilities = check_calls(model)
    check_config_round_trip(model, probabilities)
    check_keras_file_round_trip(model, probabilities, tmp_path)
    check_fit_step(model, run_eagerly)
    check_mixed_precision(name)
    check_poolings(name)
