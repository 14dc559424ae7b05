import keras
import numpy as np
import pytest

from lambda_keras.detection import WarmupStepDecay


def test_warmup_then_three_decays_and_serialization():
    schedule = WarmupStepDecay(0.32, warmup_steps=1000, total_steps=130_000)
    steps = [0, 499, 999, 50_000, 117_000, 123_500, 126_750, 129_999]
    rates = [float(schedule(s)) for s in steps]
    expected = [0.32 / 1000, 0.32 * 500 / 1000, 0.32, 0.32, 0.032, 0.0032, 0.00032, 0.00032]
    np.testing.assert_allclose(rates, expected, rtol=1e-5)
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(schedule))
    assert restored.get_config() == schedule.get_config()


FRACTIONS = r"`boundaries` must be increasing fractions of `total_steps` in \(0, 1\]"


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (
            {"warmup_steps": 500},
            ValueError,
            "`warmup_steps` must be at most `total_steps`.*warmup_steps=500, total_steps=100",
        ),
        ({"boundaries": 0.9}, TypeError, FRACTIONS + ".*received boundaries=0.9 \\(float\\)"),
        ({"boundaries": "0.9"}, TypeError, FRACTIONS + ".*received boundaries='0.9' \\(str\\)"),
        ({"boundaries": None}, TypeError, FRACTIONS + ".*received boundaries=None"),
    ],
)
def test_a_warmup_longer_than_the_run_or_a_single_boundary_is_refused(kwargs, error, message):
    with pytest.raises(error, match=message):
        WarmupStepDecay(**{"peak": 0.1, "warmup_steps": 10, "total_steps": 100, **kwargs})


@pytest.mark.parametrize("warmup_steps", [0, 100])
def test_no_warmup_or_a_warmup_as_long_as_the_run(warmup_steps):
    schedule = WarmupStepDecay(0.1, warmup_steps, 100, boundaries=[0.5])
    rates = [float(schedule(s)) for s in (0, 49, 50, 99)]
    warm = [1.0, 1.0, 1.0, 1.0] if warmup_steps == 0 else [0.01, 0.5, 0.51, 1.0]
    np.testing.assert_allclose(rates, np.multiply([0.1, 0.1, 0.01, 0.01], warm), rtol=1e-5)
    assert schedule.boundaries == (0.5,)
