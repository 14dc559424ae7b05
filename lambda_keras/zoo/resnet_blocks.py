"""Building blocks of the ResNet family: stems, bottlenecks with a conv or a lambda layer, SE.

Functional-API helpers (tensor in, tensor out) used by
[`lambda_keras.zoo.lambda_resnet`][lambda_keras.zoo.lambda_resnet] and
[`lambda_keras.zoo.hybrid_resnet50`][lambda_keras.zoo.hybrid_resnet50]. Channels last throughout.
"""

from __future__ import annotations

import dataclasses

import keras

from lambda_keras import _validation as v
from lambda_keras.layers import AveragePooling2D, BatchNormalization, LambdaLayer, StochasticDepth
from lambda_keras.layers.implementation_choice import IMPLEMENTATIONS


def conv_init() -> keras.initializers.Initializer:
    """He (fan-out) normal for convolutions, as in the reference ResNet implementations.

    A new initializer per layer: a Keras initializer draws its seed once, when it is created,
    so one shared instance would give every kernel of a shape the same values (and, created at
    import, values that ``keras.utils.set_random_seed`` does not fix).
    """
    return keras.initializers.VarianceScaling(scale=2.0, mode="fan_out", distribution="normal")


@dataclasses.dataclass(frozen=True)
class LambdaConfig:
    """Hyper-parameters of the lambda layers of a model (paper defaults, Appendix F.2)."""

    key_dim: int = 16
    num_heads: int = 4
    intra_depth: int = 1
    scope_size: int | None = 23
    implementation: str = "auto"
    use_position_bias: bool = False

    def __post_init__(self):
        # Fail on bad hyper-parameters before any layer of the model is built.
        v.positive_int("key_dim", self.key_dim)
        v.positive_int("num_heads", self.num_heads)
        v.positive_int("intra_depth", self.intra_depth)
        v.scope("scope_size", self.scope_size)
        v.implementation(self.implementation, IMPLEMENTATIONS, intra_depth=self.intra_depth)
        v.boolean("use_position_bias", self.use_position_bias)

    def layer(self, dim_out: int, name: str) -> LambdaLayer:
        return LambdaLayer(
            dim_out,
            key_dim=self.key_dim,
            num_heads=self.num_heads,
            intra_depth=self.intra_depth,
            scope_size=self.scope_size,
            implementation=self.implementation,
            batch_norm_epsilon=1e-5,
            batch_norm_momentum=0.9,
            use_position_bias=self.use_position_bias,
            name=name,
        )


@dataclasses.dataclass(frozen=True)
class NormConfig:
    """The batch norm settings of a model's blocks (momentum and epsilon)."""

    momentum: float = 0.9
    epsilon: float = 1e-5

    def layer(self, name: str, zero_gamma: bool = False) -> BatchNormalization:
        return BatchNormalization(
            momentum=self.momentum,
            epsilon=self.epsilon,
            gamma_initializer="zeros" if zero_gamma else "ones",
            name=name,
        )


def conv(x, filters: int, kernel_size: int, strides: int = 1, name: str = ""):
    """Bias-free convolution; stride 2 pads explicitly (symmetric) like the reference code."""
    if strides > 1 and kernel_size > 1:
        pad = (kernel_size - 1) // 2
        x = keras.layers.ZeroPadding2D(((pad, kernel_size - 1 - pad),) * 2, name=f"{name}_pad")(x)
        padding = "valid"
    else:
        padding = "same"
    return keras.layers.Conv2D(
        filters,
        kernel_size,
        strides=strides,
        padding=padding,
        use_bias=False,
        kernel_initializer=conv_init(),
        name=name,
    )(x)


def conv_bn_act(
    x, filters, kernel_size, strides, norm: NormConfig, name: str, activation: str = "relu"
):
    """Conv (``{name}_conv``), batch norm (``{name}_bn``), activation (``{name}_{activation}``)."""
    x = conv(x, filters, kernel_size, strides, name=f"{name}_conv")
    x = norm.layer(f"{name}_bn")(x)
    return keras.layers.Activation(activation, name=f"{name}_{activation}")(x)


def conv_bn_relu(x, filters, kernel_size, strides, norm: NormConfig, name: str):
    """[`conv_bn_act`][lambda_keras.zoo.resnet_blocks.conv_bn_act] with a ReLU."""
    return conv_bn_act(x, filters, kernel_size, strides, norm, name, "relu")


def resnet_d_stem(x, norm: NormConfig, name: str = "stem", width_multiplier: float = 1.0):
    """ResNet-D stem with the max-pool replaced by a strided 3x3 conv (ResNet-RS, App. F.2):
    3x3/2 (32), 3x3 (32), 3x3 (64), 3x3/2 (64), channels scaled by ``width_multiplier``."""
    narrow, wide = scaled(32, width_multiplier), scaled(64, width_multiplier)
    x = conv_bn_relu(x, narrow, 3, 2, norm, f"{name}_1")
    x = conv_bn_relu(x, narrow, 3, 1, norm, f"{name}_2")
    x = conv_bn_relu(x, wide, 3, 1, norm, f"{name}_3")
    return conv_bn_relu(x, wide, 3, 2, norm, f"{name}_4")


def scaled(channels: int, width_multiplier: float) -> int:
    """``channels * width_multiplier`` rounded to a multiple of 8 (at least 8)."""
    return max(8, int(round(channels * width_multiplier / 8)) * 8)


def classic_stem(x, norm: NormConfig, name: str = "stem"):
    """The original ResNet stem: 7x7/2 conv (64) and 3x3/2 max-pool."""
    x = conv_bn_relu(x, 64, 7, 2, norm, name)
    x = keras.layers.ZeroPadding2D(1, name=f"{name}_pool_pad")(x)
    return keras.layers.MaxPooling2D(3, strides=2, name=f"{name}_pool")(x)


def squeeze_excitation(x, reduced: int, name: str):
    """Squeeze-and-excitation (Hu et al.): global pool, 1x1 down to ``reduced``, ReLU, 1x1 up,
    sigmoid, rescale."""
    channels = x.shape[-1]
    s = keras.layers.GlobalAveragePooling2D(keepdims=True, name=f"{name}_squeeze")(x)
    s = keras.layers.Conv2D(
        reduced, 1, activation="relu", kernel_initializer=conv_init(), name=f"{name}_reduce"
    )(s)
    s = keras.layers.Conv2D(
        channels, 1, activation="sigmoid", kernel_initializer=conv_init(), name=f"{name}_expand"
    )(s)
    return keras.layers.Multiply(name=f"{name}_excite")([x, s])


def bottleneck(
    x,
    width: int,
    strides: int,
    *,
    use_lambda: bool,
    lambda_config: LambdaConfig,
    norm: NormConfig,
    se_ratio: float = 0.0,
    drop_rate: float = 0.0,
    resnet_d_shortcut: bool = True,
    activation: str = "relu",
    lambda_pool_size: int = 3,
    name: str,
    output_name: str | None = None,
):
    """Bottleneck block: 1x1 (width), 3x3 conv or lambda layer (width), 1x1 (4 * width).

    * A lambda block downsamples with a 3x3 average pool of stride 2 *after* the lambda layer
      (paper App. F.2; ``lambda_pool_size=2``: timm's 2x2 pool without padding); a conv block
      with a strided 3x3 conv.
    * ``activation`` follows every batch norm but the last and the residual sum (ReLU in the
      paper, SiLU in timm's ``lambda_resnet50ts``).
    * The last batch norm's gamma starts at zero.
    * ``se_ratio`` > 0 adds squeeze-and-excitation on the block output with
      ``int(4 * width * se_ratio)`` reduced channels (ResNet-RS).
    * ``drop_rate`` > 0 adds stochastic depth on the residual branch.
    * The projection shortcut is ResNet-D's (2x2 average pool, then 1x1 conv) when
      ``resnet_d_shortcut``, else a strided 1x1 conv.
    """
    channels_out = 4 * width
    shortcut = x
    if strides != 1 or x.shape[-1] != channels_out:
        if strides != 1 and resnet_d_shortcut:
            shortcut = AveragePooling2D(
                2, strides=2, padding="same", name=f"{name}_shortcut_pool"
            )(shortcut)
            shortcut = conv(shortcut, channels_out, 1, name=f"{name}_shortcut_conv")
        else:
            shortcut = conv(shortcut, channels_out, 1, strides, name=f"{name}_shortcut_conv")
        shortcut = norm.layer(f"{name}_shortcut_bn")(shortcut)

    y = conv_bn_act(x, width, 1, 1, norm, f"{name}_1", activation)
    if use_lambda:
        y = lambda_config.layer(width, name=f"{name}_2_lambda")(y)
        if strides != 1:
            y = AveragePooling2D(
                lambda_pool_size,
                strides=strides,
                padding="same" if lambda_pool_size == 3 else "valid",
                name=f"{name}_2_pool",
            )(y)
        y = norm.layer(f"{name}_2_bn")(y)
        y = keras.layers.Activation(activation, name=f"{name}_2_{activation}")(y)
    else:
        y = conv_bn_act(y, width, 3, strides, norm, f"{name}_2", activation)
    y = conv(y, channels_out, 1, name=f"{name}_3_conv")
    y = norm.layer(f"{name}_3_bn", zero_gamma=True)(y)
    if se_ratio > 0:
        y = squeeze_excitation(y, max(1, int(channels_out * se_ratio)), name=f"{name}_se")
    if drop_rate > 0:
        y = StochasticDepth(drop_rate, name=f"{name}_drop")(y)
    y = keras.layers.Add(name=f"{name}_add")([shortcut, y])
    return keras.layers.Activation(activation, name=output_name or f"{name}_out")(y)


@keras.saving.register_keras_serializable(package="lambda_keras")
class PaddedMaxPooling2D(keras.layers.Layer):
    """Max pooling over a map padded with ``-inf`` by ``padding`` pixels on every side.

    PyTorch's ``MaxPool2d(pool_size, strides, padding)``: the windows are centred on pixels
    ``0, strides, 2 * strides, ...``, unlike Keras' ``padding="same"`` (which pads after the
    map when the padding is odd), and padding never wins the max (zero padding would, after an
    activation with negative outputs such as SiLU).

    Input ``[batch, height, width, channels]``; output
    ``[batch, (height + 2 * padding - pool_size) // strides + 1, ..., channels]``.
    """

    def __init__(self, pool_size: int = 3, strides: int = 2, padding: int = 1, **kwargs):
        super().__init__(**kwargs)
        self.pool_size = v.positive_int("pool_size", pool_size)
        self.strides = v.positive_int("strides", strides)
        if isinstance(padding, bool) or not isinstance(padding, int) or padding < 0:
            raise ValueError(
                f"`padding` must be a non-negative integer; received padding={padding!r}."
            )
        self.padding = padding

    def call(self, inputs):
        p = self.padding
        x = keras.ops.pad(inputs, ((0, 0), (p, p), (p, p), (0, 0)), constant_values=-float("inf"))
        return keras.ops.max_pool(x, self.pool_size, self.strides, padding="valid")

    def compute_output_shape(self, input_shape):
        def side(n):
            if n is None:
                return None
            return (n + 2 * self.padding - self.pool_size) // self.strides + 1

        return (input_shape[0], side(input_shape[1]), side(input_shape[2]), input_shape[3])

    def get_config(self):
        return {
            **super().get_config(),
            "pool_size": self.pool_size,
            "strides": self.strides,
            "padding": self.padding,
        }
