"""The learning-rate schedule of the Mask R-CNN recipes (registered, so saved models load)."""

from __future__ import annotations

import keras

from lambda_keras import _validation as v

__all__ = ["WarmupStepDecay"]


@keras.saving.register_keras_serializable(package="lambda_keras")
class WarmupStepDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warm-up from 0 to ``peak`` over ``warmup_steps``, then ``peak`` divided by 10 at
    each fraction of ``total_steps`` in ``boundaries``."""

    def __init__(
        self,
        peak: float,
        warmup_steps: int,
        total_steps: int,
        boundaries: tuple[float, ...] = (0.9, 0.95, 0.975),
    ):
        self.peak = v.positive_number("peak", peak)
        self.warmup_steps = v.non_negative_int("warmup_steps", warmup_steps)
        self.total_steps = v.positive_int("total_steps", total_steps)
        if self.warmup_steps > self.total_steps:
            raise ValueError(
                "`warmup_steps` must be at most `total_steps` (the warm-up is part of the run); "
                f"received warmup_steps={warmup_steps!r}, total_steps={total_steps!r}."
            )
        allowed = "increasing fractions of `total_steps` in (0, 1], e.g. (0.9, 0.95)"
        fractions = v.sequence("boundaries", boundaries, allowed)
        self.boundaries = tuple(
            v.number_in("boundaries", b, 0.0, 1.0, low_open=True) for b in fractions
        )
        if list(self.boundaries) != sorted(self.boundaries):
            raise ValueError(
                "`boundaries` must be increasing fractions of `total_steps`; received "
                f"boundaries={fractions!r}."
            )

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
