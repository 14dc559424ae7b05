"""Batch normalisation whose moving statistics survive an empty training batch, with a batch
variance that cannot come out negative on any backend (without a mask or a synchronized batch,
which keep Keras' formulas)."""

from __future__ import annotations

import math

import keras
from keras import ops

from lambda_keras import _validation as v

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
    TensorFlow and JAX compute it (a masked or synchronized batch keeps Keras' moments). Keras
    on PyTorch computes ``E[x^2] - E[x]^2``, which cancels
    to a negative variance, and a NaN output, when a channel's values are large next to their
    spread (seen in a LambdaResNet-50-C4's first training step: 2 images of a 1x1 c5 map).

    On PyTorch, a training batch ``[batch, height, width, channels]`` on a CPU is normalized by
    PyTorch's own batch norm kernels, one operator for the batch and one for its gradient
    ([`torch_batch_norm`][lambda_keras.backend.torch_batch_norm]), where Keras' layer issues its
    formula op by op: the same values, statistics and gradients to float rounding, in fewer
    passes over the map. Eagerly every such batch takes them; in a traced (compiled) step one
    of at least [`MIN_VALUES`][lambda_keras.backend.torch_batch_norm.MIN_VALUES] values, as
    Inductor fuses the formula of a smaller one with the layers around it. Each moving
    statistic then moves in one operator (``torch.lerp``).

    Everything else, arguments and weights included, is Keras' layer: the zoo and the lambda
    layers use this one.

    Input and output shape: any, e.g. ``[batch, height, width, channels]``.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # A negative epsilon makes NaN outputs, a momentum above 1 moving statistics that grow.
        v.number_in("momentum", self.momentum, 0.0, 1.0)
        v.number_in("epsilon", self.epsilon, 0.0, math.inf)  # 0: frozen statistics

    def call(self, inputs, training=None, mask=None):
        if not (training and self.trainable):
            return super().call(inputs, training=training, mask=mask)
        if _holds_values(inputs):
            if mask is None and self._takes_pytorch_kernels(inputs):
                return self._pytorch_training_call(inputs)
            return super().call(inputs, training=training, mask=mask)
        moving = [self.moving_mean, self.moving_variance]
        before = [ops.copy(variable.value) for variable in moving]  # a snapshot, not a view
        outputs = super().call(inputs, training=training, mask=mask)
        empty = ops.equal(ops.size(inputs), 0)
        for variable, value in zip(moving, before, strict=True):
            variable.assign(ops.where(empty, value, variable.value))
        return outputs

    def _takes_pytorch_kernels(self, inputs) -> bool:
        """Whether a training batch of values goes through PyTorch's batch norm kernels
        ([`torch_batch_norm`][lambda_keras.backend.torch_batch_norm]): on the PyTorch backend,
        neither renorm nor a synchronized batch, and a map that
        [`takes_the_operator`][lambda_keras.backend.torch_batch_norm.takes_the_operator] (its
        size, device, dtype and axis)."""
        if keras.backend.backend() != "torch" or self.renorm or self.synchronized:
            return False
        from lambda_keras.backend.torch_batch_norm import takes_the_operator

        axis = self.axis - len(inputs.shape) if self.axis >= 0 else self.axis
        return takes_the_operator(inputs, axis)

    def _pytorch_training_call(self, inputs):
        """Keras' training ``call`` (the batch's statistics normalize it and move the moving
        ones by ``momentum``), the normalization and its statistics as PyTorch's kernels."""
        from lambda_keras.backend.torch_batch_norm import batch_norm_training, moved

        inputs = ops.cast(inputs, keras.backend.result_type(inputs.dtype, "float32"))  # as Keras'
        gamma = ops.cast(self.gamma, inputs.dtype) if self.scale else None
        beta = ops.cast(self.beta, inputs.dtype) if self.center else None
        outputs, mean, variance = batch_norm_training(inputs, gamma, beta, self.epsilon)
        for moving, batch in ((self.moving_mean, mean), (self.moving_variance, variance)):
            moving.assign(moved(ops.cast(moving, inputs.dtype), batch, self.momentum))
        return ops.cast(outputs, self.compute_dtype)

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
