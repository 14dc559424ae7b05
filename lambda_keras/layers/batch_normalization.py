"""Batch normalisation whose moving statistics survive an empty training batch."""

from __future__ import annotations

import keras
from keras import ops

__all__ = ["BatchNormalization"]


@keras.saving.register_keras_serializable(package="lambda_keras")
class BatchNormalization(keras.layers.BatchNormalization):
    """``keras.layers.BatchNormalization`` that leaves its moving statistics as they were when
    a training batch holds no values.

    Keras' layer averages over the batch: for a batch of shape ``[0, ...]`` (a ``tf.data``
    filter that dropped every example of a shard, say) the mean of no values is NaN, the moving
    mean and variance become NaN, and every later prediction of the model is NaN, silently.
    Here such a batch is normalised and passes through (its output is empty too) and the moving
    statistics keep their values, exactly. Everything else, arguments and weights included, is
    Keras' layer: the zoo and the lambda layers use this one.

    Input and output shape: any, e.g. ``[batch, height, width, channels]``.
    """

    def call(self, inputs, training=None, mask=None):
        if not (training and self.trainable):
            return super().call(inputs, training=training, mask=mask)
        moving = [self.moving_mean, self.moving_variance]
        before = [ops.copy(variable.value) for variable in moving]  # a snapshot, not a view
        outputs = super().call(inputs, training=training, mask=mask)
        empty = ops.equal(ops.size(inputs), 0)
        for variable, value in zip(moving, before, strict=True):
            variable.assign(ops.where(empty, value, variable.value))
        return outputs
