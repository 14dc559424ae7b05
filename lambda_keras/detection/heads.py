"""The three heads of Mask R-CNN with FPN (He et al., 2017): RPN, box head (2 fc), mask head."""

from __future__ import annotations

import keras

from lambda_keras import _validation as v
from lambda_keras.zoo.resnet_blocks import conv_init

__all__ = ["BoxHead", "MaskHead", "RPNHead"]


@keras.saving.register_keras_serializable(package="lambda_keras")
class RPNHead(keras.layers.Layer):
    """A 3x3 convolution (ReLU), then per anchor an objectness logit and 4 box deltas; shared
    by every level.

    Call: ``{"P<l>": [b, h_l, w_l, c]}`` -> ``(objectness [b, n], deltas [b, n, 4])`` over all
    levels in order, each level row-major with the anchors of a cell innermost (the order of
    :func:`lambda_keras.detection.ops.pyramid_anchors`).
    """

    def __init__(self, anchors_per_cell: int = 3, channels: int = 256, **kwargs):
        super().__init__(**kwargs)
        self.anchors_per_cell = v.positive_int("anchors_per_cell", anchors_per_cell)
        self.channels = v.positive_int("channels", channels)
        small = keras.initializers.RandomNormal(stddev=0.01)
        self.conv = keras.layers.Conv2D(
            channels, 3, padding="same", activation="relu", kernel_initializer=small, name="conv"
        )
        self.objectness = keras.layers.Conv2D(
            anchors_per_cell, 1, kernel_initializer=small, name="objectness"
        )
        self.deltas = keras.layers.Conv2D(
            4 * anchors_per_cell, 1, kernel_initializer=small, name="deltas"
        )

    def build(self, input_shape):
        shape = next(iter(input_shape.values()))
        self.conv.build(shape)
        self.objectness.build((*shape[:-1], self.channels))
        self.deltas.build((*shape[:-1], self.channels))

    def call(self, features):
        logits, deltas = [], []
        for level in sorted(features, key=lambda key: int(key[1:])):
            x = self.conv(features[level])
            batch = keras.ops.shape(x)[0]
            logits.append(keras.ops.reshape(self.objectness(x), (batch, -1)))
            deltas.append(keras.ops.reshape(self.deltas(x), (batch, -1, 4)))
        return keras.ops.concatenate(logits, 1), keras.ops.concatenate(deltas, 1)

    def get_config(self):
        return {
            **super().get_config(),
            "anchors_per_cell": self.anchors_per_cell,
            "channels": self.channels,
        }


@keras.saving.register_keras_serializable(package="lambda_keras")
class BoxHead(keras.layers.Layer):
    """Two fully connected layers (ReLU), then class logits (background + ``num_classes``) and
    class-specific box deltas.

    Call: RoI features ``[b, R, 7, 7, c]`` -> ``(logits [b, R, num_classes + 1],
    deltas [b, R, num_classes, 4])``.
    """

    def __init__(self, num_classes: int, units: int = 1024, **kwargs):
        super().__init__(**kwargs)
        self.num_classes = v.positive_int("num_classes", num_classes)
        self.units = v.positive_int("units", units)
        self.fc1 = keras.layers.Dense(units, activation="relu", name="fc1")
        self.fc2 = keras.layers.Dense(units, activation="relu", name="fc2")
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

    def build(self, input_shape):
        flat = input_shape[2] * input_shape[3] * input_shape[4]
        self.fc1.build((None, flat))
        self.fc2.build((None, self.units))
        self.logits.build((None, self.units))
        self.deltas.build((None, self.units))

    def call(self, roi_features):
        shape = keras.ops.shape(roi_features)
        x = keras.ops.reshape(roi_features, (shape[0], shape[1], -1))
        x = self.fc2(self.fc1(x))
        deltas = keras.ops.reshape(self.deltas(x), (shape[0], shape[1], self.num_classes, 4))
        return self.logits(x), deltas

    def get_config(self):
        return {**super().get_config(), "num_classes": self.num_classes, "units": self.units}


@keras.saving.register_keras_serializable(package="lambda_keras")
class MaskHead(keras.layers.Layer):
    """Four 3x3 convolutions (ReLU), a 2x2 stride-2 transposed convolution (ReLU) and a 1x1
    convolution to one mask logit map per class.

    Call: RoI features ``[b, R, 14, 14, c]`` -> mask logits ``[b, R, 28, 28, num_classes]``.
    """

    def __init__(self, num_classes: int, channels: int = 256, num_convs: int = 4, **kwargs):
        super().__init__(**kwargs)
        self.num_classes = v.positive_int("num_classes", num_classes)
        self.channels = v.positive_int("channels", channels)
        self.num_convs = v.positive_int("num_convs", num_convs)
        self.convs = [
            keras.layers.Conv2D(
                channels,
                3,
                padding="same",
                activation="relu",
                kernel_initializer=conv_init(),
                name=f"conv{i + 1}",
            )
            for i in range(num_convs)
        ]
        self.upsample = keras.layers.Conv2DTranspose(
            channels,
            2,
            strides=2,
            activation="relu",
            kernel_initializer=conv_init(),
            name="upsample",
        )
        self.logits = keras.layers.Conv2D(
            num_classes, 1, kernel_initializer=conv_init(), name="logits"
        )

    def build(self, input_shape):
        size, channels = input_shape[2], input_shape[4]
        for conv in self.convs:
            conv.build((None, size, size, channels))
            channels = self.channels
        self.upsample.build((None, size, size, channels))
        self.logits.build((None, 2 * size, 2 * size, self.channels))

    def call(self, roi_features):
        shape = keras.ops.shape(roi_features)
        x = keras.ops.reshape(roi_features, (-1, shape[2], shape[3], shape[4]))
        for conv in self.convs:
            x = conv(x)
        x = self.logits(self.upsample(x))
        return keras.ops.reshape(
            x, (shape[0], shape[1], 2 * shape[2], 2 * shape[3], self.num_classes)
        )

    def get_config(self):
        return {
            **super().get_config(),
            "num_classes": self.num_classes,
            "channels": self.channels,
            "num_convs": self.num_convs,
        }
