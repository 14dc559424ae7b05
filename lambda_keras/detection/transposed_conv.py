"""A transposed convolution whose kernel tiles its output: the mask head's 2x2 stride-2
upsampling, as one matrix product per input cell on JAX.

With ``kernel_size == strides`` and ``"valid"`` padding, every input cell writes its own
``kernel_size`` block of the output and no two blocks overlap, so the layer is
``einsum("bhwc,ijoc->bhiwjo")`` followed by a reshape, and its gradients are matrix products too.
XLA's CPU runtime instead computes the kernel gradient of ``conv_transpose`` with its generic
convolution emitter: in one training step of the converted ``maskrcnn_resnet50_fpn`` on JAX (512 x
512, batch 1, 2 CPU threads) that one convolution took 13.2 s of 18.5 s (``jax.profiler``:
``convolution-base-dilated``, a ``[256, 2, 2, 256]`` kernel gradient over the RoIs' 14 x 14 maps).
On TensorFlow and PyTorch the layer is Keras' ``Conv2DTranspose`` (their kernels are fast).
"""

from __future__ import annotations

import keras

__all__ = ["TiledConv2DTranspose"]


@keras.saving.register_keras_serializable(package="lambda_keras")
class TiledConv2DTranspose(keras.layers.Conv2DTranspose):
    """``keras.layers.Conv2DTranspose`` with ``kernel_size == strides`` and ``"valid"`` padding
    (the same arguments, weights and values), computed on JAX as a matrix product per input cell.

    Call: ``[batch, height, width, in_channels]`` -> ``[batch, height * kh, width * kw,
    filters]``.
    """

    def __init__(self, filters: int, kernel_size, **kwargs):
        kwargs.setdefault("strides", kernel_size)
        super().__init__(filters, kernel_size, **kwargs)
        tiles = (
            tuple(self.kernel_size) == tuple(self.strides)
            and self.padding == "valid"
            and self.data_format == "channels_last"
            and tuple(self.dilation_rate) == (1, 1)
            and self.output_padding is None
        )
        if not tiles:
            raise ValueError(
                "TiledConv2DTranspose needs strides equal to kernel_size, padding='valid', "
                "channels_last, no dilation and no output_padding; received "
                f"kernel_size={self.kernel_size}, strides={self.strides}, "
                f"padding={self.padding!r}, data_format={self.data_format!r}, "
                f"dilation_rate={self.dilation_rate}, output_padding={self.output_padding}."
            )

    def call(self, inputs):
        if keras.backend.backend() != "jax":
            return super().call(inputs)
        ops = keras.ops
        shape = ops.shape(inputs)
        rows, cols = self.kernel_size
        tiles = ops.einsum("bhwc,ijoc->bhiwjo", inputs, self.kernel)
        outputs = ops.reshape(tiles, (shape[0], shape[1] * rows, shape[2] * cols, self.filters))
        if self.use_bias:
            outputs = outputs + self.bias
        return outputs if self.activation is None else self.activation(outputs)
