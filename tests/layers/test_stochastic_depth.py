"""StochasticDepth drops whole examples' branches in training and is the identity otherwise."""

import keras
import numpy as np
import pytest

from lambda_keras.layers import StochasticDepth
from tests.backend import numpy


def test_training_drops_per_example_and_rescales():
    layer = StochasticDepth(0.25, seed=3)
    x = np.ones((4000, 3, 3, 2), "float32")
    y = numpy(layer(x, training=True))
    per_example = y.reshape(4000, -1)
    assert np.all((per_example == 0).all(axis=1) | np.isclose(per_example, 1 / 0.75).all(axis=1))
    kept = (per_example != 0).all(axis=1).mean()
    assert abs(kept - 0.75) < 0.03
    np.testing.assert_array_equal(numpy(layer(x, training=False)), x)


def test_config_round_trip_and_errors():
    layer = StochasticDepth(0.1, seed=7, name="sd")
    assert StochasticDepth.from_config(layer.get_config()).get_config() == layer.get_config()
    for rate in (-0.1, 1.0, "0.1"):
        with pytest.raises(ValueError, match="rate"):
            StochasticDepth(rate)


def test_in_a_saved_model(tmp_path):
    inputs = keras.Input((4,))
    model = keras.Model(inputs, StochasticDepth(0.5)(keras.layers.Dense(4)(inputs)))
    model.save(tmp_path / "m.keras")
    loaded = keras.saving.load_model(tmp_path / "m.keras", safe_mode=True)
    x = np.ones((2, 4), "float32")
    np.testing.assert_array_equal(numpy(loaded(x)), numpy(model(x)))
