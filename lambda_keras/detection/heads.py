"""The three heads of Mask R-CNN with FPN (He et al., 2017): RPN, box head, mask head.

Their variants are settings: torchvision's ``maskrcnn_resnet50_fpn`` has one RPN convolution,
a box head of two fully connected layers and convolutions with biases; its ``_v2`` has two RPN
convolutions, a box head of four convolutions and one fully connected layer, and batch norm after
every head convolution (which then has no bias).
"""

from __future__ import annotations

import keras

from lambda_keras import _validation as v
from lambda_keras.detection.transposed_conv import TiledConv2DTranspose
from lambda_keras.detection.valid_region import zero_outside
from lambda_keras.layers.batch_normalization import BatchNormalization
from lambda_keras.zoo.resnet_blocks import conv_init

__all__ = ["BoxHead", "MaskHead", "RPNHead", "conv_norm_layers"]


def conv_norm_layers(channels: int, count: int, batch_norm: bool, relu: bool = True):
    """``count`` 3x3 convolutions (``conv1`` ...), with a bias, or without one and each followed
    by a batch norm (``norm1`` ..., PyTorch's epsilon 1e-5); ``(convs, norms)``, norms empty
    without batch norm. The ReLU follows the batch norm, or is the convolution's activation."""
    convs = [
        keras.layers.Conv2D(
            channels,
            3,
            padding="same",
            use_bias=not batch_norm,
            activation="relu" if relu and not batch_norm else None,
            kernel_initializer=conv_init(),
            name=f"conv{i + 1}",
        )
        for i in range(count)
    ]
    norms = [
        BatchNormalization(momentum=0.9, epsilon=1e-5, name=f"norm{i + 1}") for i in range(count)
    ]
    return convs, norms if batch_norm else []


def _apply(x, convs, norms, relu: bool = True):
    for i, conv in enumerate(convs):
        x = conv(x)
        if norms:
            x = norms[i](x)
            x = keras.ops.relu(x) if relu else x
    return x


def _build_convs(convs, norms, shape, channels: int):
    for i, conv in enumerate(convs):
        conv.build(shape)
        shape = (*shape[:-1], channels)
        if norms:
            norms[i].build(shape)
    return shape


@keras.saving.register_keras_serializable(package="lambda_keras")
class RPNHead(keras.layers.Layer):
    """``num_convs`` 3x3 convolutions (ReLU), then per anchor an objectness logit and 4 box
    deltas; shared by every level.

    Call: ``{"P<l>": [b, h_l, w_l, c]}`` -> ``(objectness [b, n], deltas [b, n, 4])`` over all
    levels in order, each level row-major with the anchors of a cell innermost (the order of
    [pyramid_anchors][lambda_keras.detection.ops.pyramid_anchors]). With ``valid_sizes``
    (``[b, 2]`` int, each image's part of the batch in pixels) each level is zeroed beyond each
    image between two convolutions, as the image alone would see zeros there.
    """

    def __init__(
        self, anchors_per_cell: int = 3, channels: int = 256, num_convs: int = 1, **kwargs
    ):
        super().__init__(**kwargs)
        self.anchors_per_cell = v.positive_int("anchors_per_cell", anchors_per_cell)
        self.channels = v.positive_int("channels", channels)
        self.num_convs = v.positive_int("num_convs", num_convs)
        small = keras.initializers.RandomNormal(stddev=0.01)
        self.convs = [
            keras.layers.Conv2D(
                channels,
                3,
                padding="same",
                activation="relu",
                kernel_initializer=small,
                name="conv" if i == 0 else f"conv{i + 1}",
            )
            for i in range(num_convs)
        ]
        self.objectness = keras.layers.Conv2D(
            anchors_per_cell, 1, kernel_initializer=small, name="objectness"
        )
        self.deltas = keras.layers.Conv2D(
            4 * anchors_per_cell, 1, kernel_initializer=small, name="deltas"
        )

    def build(self, input_shape):
        shape = next(iter(input_shape.values()))
        shape = _build_convs(self.convs, [], shape, self.channels)
        self.objectness.build(shape)
        self.deltas.build(shape)

    def call(self, features, valid_sizes=None):
        logits, deltas = [], []
        for level in sorted(features, key=lambda key: int(key[1:])):
            x = features[level]
            for i, conv in enumerate(self.convs):
                if i and valid_sizes is not None:
                    x = zero_outside(x, valid_sizes, 2 ** int(level[1:]))
                x = conv(x)
            batch = keras.ops.shape(x)[0]
            # The anchor count is static wherever the map's size is (symbolic calls included).
            known = x.shape[1] is not None and x.shape[2] is not None
            count = x.shape[1] * x.shape[2] * self.anchors_per_cell if known else -1
            logits.append(keras.ops.reshape(self.objectness(x), (batch, count)))
            deltas.append(keras.ops.reshape(self.deltas(x), (batch, count, 4)))
        return keras.ops.concatenate(logits, 1), keras.ops.concatenate(deltas, 1)

    def get_config(self):
        return {
            **super().get_config(),
            "anchors_per_cell": self.anchors_per_cell,
            "channels": self.channels,
            "num_convs": self.num_convs,
        }


@keras.saving.register_keras_serializable(package="lambda_keras")
class BoxHead(keras.layers.Layer):
    """``num_convs`` 3x3 convolutions (``conv_channels`` wide, ReLU, batch norm with
    ``batch_norm``), then ``num_fcs`` fully connected layers (ReLU), then class logits
    (background + ``num_classes``) and class-specific box deltas.

    Call: RoI features ``[b, R, 7, 7, c]`` -> ``(logits [b, R, num_classes + 1],
    deltas [b, R, num_classes, 4])``.
    """

    def __init__(
        self,
        num_classes: int,
        units: int = 1024,
        *,
        num_convs: int = 0,
        conv_channels: int = 256,
        num_fcs: int = 2,
        batch_norm: bool = False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_classes = v.positive_int("num_classes", num_classes)
        self.units = v.positive_int("units", units)
        self.num_convs = v.non_negative_int("num_convs", num_convs)
        self.conv_channels = v.positive_int("conv_channels", conv_channels)
        self.num_fcs = v.positive_int("num_fcs", num_fcs)
        self.batch_norm = v.boolean("batch_norm", batch_norm)
        self.convs, self.norms = conv_norm_layers(conv_channels, num_convs, batch_norm)
        self.fcs = [
            keras.layers.Dense(units, activation="relu", name=f"fc{i + 1}") for i in range(num_fcs)
        ]
        self.logits = keras.layers.Dense(
            num_classes + 1,
            kernel_initializer=keras.initializers.RandomNormal(stddev=0.01),
            name="logits",
        )
        self.deltas = keras.layers.Dense(
            4 * num_classes,
            kernel_initializer=keras.initializers.RandomNormal(stddev=0.001),
            name="deltas",
        )

    @property
    def fc1(self):
        return self.fcs[0]

    @property
    def fc2(self):
        return self.fcs[1]

    def build(self, input_shape):
        shape = (None, *input_shape[2:])
        shape = _build_convs(self.convs, self.norms, shape, self.conv_channels)
        flat = shape[1] * shape[2] * shape[3]
        for fc in self.fcs:
            fc.build((None, flat))
            flat = self.units
        self.logits.build((None, self.units))
        self.deltas.build((None, self.units))

    def call(self, roi_features):
        shape = keras.ops.shape(roi_features)
        x = roi_features
        if self.convs:
            x = keras.ops.reshape(x, (-1, *x.shape[2:]))
            x = _apply(x, self.convs, self.norms)
        x = keras.ops.reshape(x, (shape[0], shape[1], -1))  # (y, x, c) order
        for fc in self.fcs:
            x = fc(x)
        deltas = keras.ops.reshape(self.deltas(x), (shape[0], shape[1], self.num_classes, 4))
        return self.logits(x), deltas

    def get_config(self):
        return {
            **super().get_config(),
            "num_classes": self.num_classes,
            "units": self.units,
            "num_convs": self.num_convs,
            "conv_channels": self.conv_channels,
            "num_fcs": self.num_fcs,
            "batch_norm": self.batch_norm,
        }


@keras.saving.register_keras_serializable(package="lambda_keras")
class MaskHead(keras.layers.Layer):
    """``num_convs`` 3x3 convolutions (ReLU; batch norm with ``batch_norm``), a 2x2 stride-2
    transposed convolution (ReLU) and a 1x1 convolution to one mask logit map per class.

    Call: RoI features ``[b, R, 14, 14, c]`` -> mask logits ``[b, R, 28, 28, num_classes]``.
    """

    def __init__(
        self,
        num_classes: int,
        channels: int = 256,
        num_convs: int = 4,
        *,
        batch_norm: bool = False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_classes = v.positive_int("num_classes", num_classes)
        self.channels = v.positive_int("channels", channels)
        self.num_convs = v.positive_int("num_convs", num_convs)
        self.batch_norm = v.boolean("batch_norm", batch_norm)
        self.convs, self.norms = conv_norm_layers(channels, num_convs, batch_norm)
        self.upsample = TiledConv2DTranspose(
            channels,
            2,
            activation="relu",
            kernel_initializer=conv_init(),
            name="upsample",
        )
        self.logits = keras.layers.Conv2D(
            num_classes, 1, kernel_initializer=conv_init(), name="logits"
        )

    def build(self, input_shape):
        size = input_shape[2]
        shape = _build_convs(
            self.convs, self.norms, (None, size, size, input_shape[4]), self.channels
        )
        self.upsample.build(shape)
        self.logits.build((None, 2 * size, 2 * size, self.channels))

    def call(self, roi_features):
        shape = keras.ops.shape(roi_features)
        x = keras.ops.reshape(roi_features, (-1, shape[2], shape[3], shape[4]))
        x = self.logits(self.upsample(_apply(x, self.convs, self.norms)))
        return keras.ops.reshape(
            x, (shape[0], shape[1], 2 * shape[2], 2 * shape[3], self.num_classes)
        )

    def get_config(self):
        return {
            **super().get_config(),
            "num_classes": self.num_classes,
            "channels": self.channels,
            "num_convs": self.num_convs,
            "batch_norm": self.batch_norm,
        }
