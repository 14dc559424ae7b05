"""Batch normalisation whose moving statistics survive an empty training batch, with a variance
that cannot come out negative on any backend."""

from __future__ import annotations

import keras
from keras import ops

__all__ = ["BatchNormalization"]


@keras.saving.register_keras_serializable(package="lambda_keras")
class BatchNormalization(keras.layers.BatchNormalization):
    """``keras.layers.BatchNormalization`` that leaves its moving statistics as they were when
    a training batch holds no values.

    Keras' layer averages over the batch: for a batch of shape ``[0, ...]`` (a TensorFlow input
    filter that dropped every example of a shard, say) the mean of no values is NaN, the moving
    mean and variance become NaN, and every later prediction of the model is NaN, silently.
    Here such a batch is normalised and passes through (its output is empty too) and the moving
    statistics keep their values, exactly. The guard runs only where the batch's shape is not
    known before the call (a TensorFlow graph with an unknown batch size); a batch whose static
    shape holds values (eager PyTorch, JAX's ``jit``, a traced PyTorch step) costs no operation
    more than Keras' layer.

    The batch variance is the mean squared deviation from the batch mean on every backend, as
    TensorFlow and JAX compute it. Keras on PyTorch computes ``E[x^2] - E[x]^2``, which cancels
    to a negative variance, and a NaN output, when a channel's values are large next to their
    spread (seen in a LambdaResNet-50-C4's first training step: 2 images of a 1x1 c5 map).

    Everything else, arguments and weights included, is Keras' layer: the zoo and the lambda
    layers use this one.

    Input and output shape: any, e.g. ``[batch, height, width, channels]``.
    """

    def call(self, inputs, training=None, mask=None):
        if not (training and self.trainable) or _holds_values(inputs):
            return super().call(inputs, training=training, mask=mask)
        moving = [self.moving_mean, self.moving_variance]
        before = [ops.copy(variable.value) for variable in moving]  # a snapshot, not a view
        outputs = super().call(inputs, training=training, mask=mask)
        empty = ops.equal(ops.size(inputs), 0)
        for variable, value in zip(moving, before, strict=True):
            variable.assign(ops.where(empty, value, variable.value))
        return outputs

    def _moments(self, inputs, mask):
        """Batch mean and variance over the reduction axes (``inputs`` already at least float32:
        Keras' ``call`` casts them)."""
        if mask is not None or self.synchronized:
            return super()._moments(inputs, mask)
        axes = self._reduction_axes
        mean = ops.mean(inputs, axis=axes, keepdims=True)
        variance = ops.mean(ops.square(inputs - ops.stop_gradient(mean)), axis=axes)
        return ops.squeeze(mean, axis=axes), variance


def _holds_values(inputs) -> bool:
    """Whether ``inputs`` holds at least one value, as its static shape says (False where a
    length is unknown or zero)."""
    return all(isinstance(length, int) and length > 0 for length in inputs.shape)
