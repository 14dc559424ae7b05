"""Feature pyramid network (Lin et al., 2017) as used by Mask R-CNN: P2-P5 from a backbone's
stages, P6 by subsampling P5."""

from __future__ import annotations

import keras

from lambda_keras import _validation as v
from lambda_keras.detection.valid_region import zero_outside
from lambda_keras.layers.batch_normalization import BatchNormalization
from lambda_keras.zoo.resnet_blocks import conv_init

__all__ = ["FeaturePyramid"]


@keras.saving.register_keras_serializable(package="lambda_keras")
class FeaturePyramid(keras.layers.Layer):
    """Lateral 1x1 convolutions, a top-down path (nearest 2x upsampling, sum), a 3x3
    convolution on each level, and P6 = 1x1 max-pool of stride 2 of P5 (for the RPN). With
    ``batch_norm`` every convolution has no bias and a batch norm after it (PyTorch's epsilon
    1e-5; torchvision's ``maskrcnn_resnet50_fpn_v2``).

    Call: ``{"P2": [b, h/4, w/4, c2], ..., "P5": [b, h/32, w/32, c5]}`` ->
    ``{"P2": [b, h/4, w/4, channels], ..., "P6": [b, h/64, w/64, channels]}``. With
    ``valid_sizes`` (``[b, 2]`` int, each image's part of the batch in pixels) every map is zero
    beyond each image's part, before the 3x3 convolutions and on output
    (``lambda_keras.detection.valid_region``).
    """

    LEVELS = ("P2", "P3", "P4", "P5")

    def __init__(self, channels: int = 256, *, batch_norm: bool = False, **kwargs):
        super().__init__(**kwargs)
        self.channels = v.positive_int("channels", channels)
        self.batch_norm = v.boolean("batch_norm", batch_norm)

        def conv(size: int, name: str):
            return keras.layers.Conv2D(
                channels,
                size,
                padding="same",
                use_bias=not batch_norm,
                kernel_initializer=conv_init(),
                name=name,
            )

        def norms(kind: str) -> dict:
            if not batch_norm:
                return {}
            return {
                level: BatchNormalization(momentum=0.9, epsilon=1e-5, name=f"{kind}_norm_{level}")
                for level in self.LEVELS
            }

        self.lateral = {level: conv(1, f"lateral_{level}") for level in self.LEVELS}
        self.output_convs = {level: conv(3, f"output_{level}") for level in self.LEVELS}
        self.lateral_norms, self.output_norms = norms("lateral"), norms("output")

    def build(self, input_shape):
        missing = [level for level in self.LEVELS if level not in input_shape]
        if missing:
            raise ValueError(
                f"FeaturePyramid needs the levels {list(self.LEVELS)}; missing {missing}."
            )
        for level in self.LEVELS:
            shape = (*input_shape[level][:-1], self.channels)
            self.lateral[level].build(input_shape[level])
            self.output_convs[level].build(shape)
            for norms in (self.lateral_norms, self.output_norms):
                if norms:
                    norms[level].build(shape)

    def call(self, features, valid_sizes=None):
        def valid(x, level):
            return x if valid_sizes is None else zero_outside(x, valid_sizes, 2 ** int(level[1:]))

        def normed(norms, level, x):
            return norms[level](x) if norms else x

        outputs = {}
        top_down = None
        for level in reversed(self.LEVELS):
            lateral = normed(self.lateral_norms, level, self.lateral[level](features[level]))
            if top_down is not None:
                lateral = _add_upsampled(lateral, top_down)
            top_down = lateral
            output = self.output_convs[level](valid(lateral, level))
            outputs[level] = valid(normed(self.output_norms, level, output), level)
        outputs["P6"] = outputs["P5"][:, ::2, ::2, :]
        return {level: outputs[level] for level in (*self.LEVELS, "P6")}

    def get_config(self):
        return {**super().get_config(), "channels": self.channels, "batch_norm": self.batch_norm}


def _add_upsampled(fine, coarse):
    """``fine`` ``[batch, 2h, 2w, channels]`` plus ``coarse`` ``[batch, h, w, channels]``
    upsampled by 2 (nearest, as torchvision's FPN), without building the upsampled map: ``fine``
    seen as ``[batch, h, 2, w, 2, channels]`` takes ``coarse`` by broadcasting."""
    shape = keras.ops.shape(coarse)
    pairs = keras.ops.reshape(fine, (-1, shape[1], 2, shape[2], 2, shape[3]))
    summed = pairs + coarse[:, :, None, :, None, :]
    return keras.ops.reshape(summed, keras.ops.shape(fine))
