"""The learning-rate schedule of the Mask R-CNN recipes (registered, so saved models load)."""

from __future__ import annotations

import keras

__all__ = ["WarmupStepDecay"]


@keras.saving.register_keras_serializable(package="lambda_keras")
class WarmupStepDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warm-up from 0 to ``peak`` over ``warmup_steps``, then ``peak`` divided by 10 at
    each fraction of ``total_steps`` in ``boundaries``."""

    def __init__(self, peak, warmup_steps, total_steps, boundaries=(0.9, 0.95, 0.975)):
        self.peak = float(peak)
        self.warmup_steps = int(warmup_steps)
        self.total_steps = int(total_steps)
        self.boundaries = tuple(float(b) for b in boundaries)

    def __call__(self, step):
        step = keras.ops.cast(step, "float32")
        warm = keras.ops.minimum(1.0, (step + 1.0) / max(self.warmup_steps, 1))
        decays = sum(
            keras.ops.cast(step >= b * self.total_steps, "float32") for b in self.boundaries
        )
        return self.peak * warm * keras.ops.power(0.1, decays)

    def get_config(self):
        return {
            "peak": self.peak,
            "warmup_steps": self.warmup_steps,
            "total_steps": self.total_steps,
            "boundaries": self.boundaries,
        }
