import keras
import numpy as np

from lambda_keras.detection import WarmupStepDecay


def test_warmup_then_three_decays_and_serialization():
    schedule = WarmupStepDecay(0.32, warmup_steps=1000, total_steps=130_000)
    steps = [0, 499, 999, 50_000, 117_000, 123_500, 126_750, 129_999]
    rates = [float(schedule(s)) for s in steps]
    expected = [0.32 / 1000, 0.32 * 500 / 1000, 0.32, 0.32, 0.032, 0.0032, 0.00032, 0.00032]
    np.testing.assert_allclose(rates, expected, rtol=1e-5)
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(schedule))
    assert restored.get_config() == schedule.get_config()
