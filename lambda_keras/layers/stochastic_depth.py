"""Stochastic depth (drop-path) for residual branches: not in core Keras 3."""

from __future__ import annotations

import keras

__all__ = ["StochasticDepth"]


@keras.saving.register_keras_serializable(package="lambda_keras")
class StochasticDepth(keras.layers.Layer):
    """Drops a whole residual branch per example (Huang et al., 2016).

    In training, each example's branch is zeroed with probability ``rate`` and kept ones are
    scaled by ``1 / (1 - rate)``, so inference (identity) sees the same expectation.

    Input: the residual branch, any shape ``[batch, ...]``. Output: the same shape.

    Args:
        rate: Drop probability, in ``[0, 1)``.
        seed: Optional seed of the random draws.
    """

    def __init__(self, rate: float = 0.0, seed: int | None = None, **kwargs):
        super().__init__(**kwargs)
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate < 1:
            raise ValueError(f"`rate` must be a number in [0, 1); received rate={rate!r}.")
        self.rate = float(rate)
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)

    def call(self, inputs, training=None):
        if not training or self.rate == 0:
            return inputs
        keep = 1.0 - self.rate
        shape = (keras.ops.shape(inputs)[0],) + (1,) * (len(inputs.shape) - 1)
        mask = keras.random.uniform(shape, seed=self.seed_generator, dtype=inputs.dtype) < keep
        return keras.ops.where(mask, inputs / keep, keras.ops.zeros_like(inputs))

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "rate": self.rate, "seed": self.seed}
