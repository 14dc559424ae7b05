"""torchvision's ResNet-50 (v1.5) as Mask R-CNN's backbone
(``torchvision.models.detection.backbone_utils.resnet_fpn_backbone``): with frozen batch norm
(``maskrcnn_resnet50_fpn``) or with batch norm that trains in the stages that train
(``maskrcnn_resnet50_fpn_v2``).

Layer names are torchvision's module names with ``_`` for ``.`` (``layer2_0_conv2``,
``layer2_0_downsample_0``), so that
[`lambda_keras.detection.convert_torchvision`][lambda_keras.detection.convert_torchvision] maps a
checkpoint one tensor to one weight. Channels last; the stride sits on the 3x3 convolution
(v1.5); padding is PyTorch's (symmetric, explicit where Keras' ``"same"`` would differ).

The model takes ``{"images": [b, H, W, 3] normalised, "valid_sizes": [b, 2] int}`` and zeroes
each map beyond each image's ``valid_sizes`` before every 3x3 convolution and the max-pool
([`lambda_keras.detection.valid_region`][lambda_keras.detection.valid_region]); it returns ``{"P2":
stride 4, ..., "P5": 32}`` (torchvision's ``layer1`` ... ``layer4``).
"""

from __future__ import annotations

import keras

from lambda_keras.detection.valid_region import ZeroOutside
from lambda_keras.layers.batch_normalization import BatchNormalization
from lambda_keras.zoo.resnet_blocks import conv

__all__ = ["STAGE_BLOCKS", "resnet50_backbone"]

STAGE_BLOCKS = (3, 4, 6, 3)
"""Bottleneck blocks per stage of torchvision's ResNet-50 (c2 to c5)."""


def resnet50_backbone(
    trainable_layers: int = 3,
    epsilon: float = 0.0,
    name: str = "backbone",
    *,
    frozen_batch_norm: bool = True,
) -> keras.Model:
    """ResNet-50 ``conv1`` ... ``layer4``.

    Args:
        trainable_layers: How many of ``layer4``, ``layer3``, ``layer2``, ``layer1``, ``conv1``
            (in that order) train, 0-5; torchvision's default is 3.
        epsilon: The batch norms' epsilon: 0 for torchvision's v1 COCO weights (torchvision
            sets it so when it loads them), 1e-5 for its other ResNets.
        frozen_batch_norm: True: batch norm never trains (torchvision's ``FrozenBatchNorm2d``).
            False: the batch norms of the stages that train train too, their statistics
            included (``maskrcnn_resnet50_fpn_v2``); those of frozen stages keep theirs
            (torchvision, in train mode, would still update those statistics).
    """
    if isinstance(trainable_layers, bool) or trainable_layers not in range(6):
        raise ValueError(
            f"`trainable_layers` must be an int from 0 to 5; received {trainable_layers!r}."
        )
    trained = ("layer4", "layer3", "layer2", "layer1", "conv1")[:trainable_layers]
    images = keras.Input((None, None, 3), name="images")
    valid_sizes = keras.Input((2,), dtype="int32", name="valid_sizes")
    x = conv(images, 64, 7, 2, name="conv1")
    x = _batch_norm(x, "bn1", epsilon, frozen_batch_norm)
    x = keras.layers.ReLU(name="relu")(x)
    x = ZeroOutside(2, name="maxpool_valid")([x, valid_sizes])
    x = keras.layers.ZeroPadding2D(1, name="maxpool_pad")(x)  # >= 0 after ReLU: zeros never win
    x = keras.layers.MaxPooling2D(3, strides=2, name="maxpool")(x)
    outputs, stride = {}, 4
    for stage, blocks in enumerate(STAGE_BLOCKS, start=1):
        for block in range(blocks):
            strides = 2 if stage > 1 and block == 0 else 1
            x = _bottleneck(
                x,
                valid_sizes,
                64 * 2 ** (stage - 1),
                strides,
                stride,
                (epsilon, frozen_batch_norm),
                f"layer{stage}_{block}",
            )
            stride *= strides
        outputs[f"P{stage + 1}"] = x
    model = keras.Model({"images": images, "valid_sizes": valid_sizes}, outputs, name=name)
    for layer in model.layers:
        stage = "conv1" if layer.name == "bn1" else layer.name.split("_")[0]
        stage_trains = stage in trained
        if isinstance(layer, keras.layers.BatchNormalization):
            layer.trainable = stage_trains and not frozen_batch_norm
        elif isinstance(layer, keras.layers.Conv2D):
            layer.trainable = stage_trains
    return model


def _batch_norm(x, name: str, epsilon: float, frozen: bool):
    """torchvision's ``FrozenBatchNorm2d`` (always the stored statistics) or ``BatchNorm2d``
    (the project's batch norm, whose variance stays non-negative on PyTorch); which of them
    train is set once the model is built."""
    if frozen:
        return keras.layers.BatchNormalization(epsilon=epsilon, name=name)(x)
    return BatchNormalization(momentum=0.9, epsilon=epsilon, name=name)(x)


def _bottleneck(x, valid_sizes, width: int, strides: int, stride_in: int, norm, name: str):
    """``norm``: the batch norms' ``(epsilon, frozen)``."""
    shortcut = x
    if strides != 1 or x.shape[-1] != 4 * width:
        shortcut = conv(x, 4 * width, 1, strides, name=f"{name}_downsample_0")
        shortcut = _batch_norm(shortcut, f"{name}_downsample_1", *norm)
    y = conv(x, width, 1, name=f"{name}_conv1")
    y = keras.layers.ReLU(name=f"{name}_relu1")(_batch_norm(y, f"{name}_bn1", *norm))
    y = ZeroOutside(stride_in, name=f"{name}_valid")([y, valid_sizes])
    y = conv(y, width, 3, strides, name=f"{name}_conv2")
    y = keras.layers.ReLU(name=f"{name}_relu2")(_batch_norm(y, f"{name}_bn2", *norm))
    y = _batch_norm(conv(y, 4 * width, 1, name=f"{name}_conv3"), f"{name}_bn3", *norm)
    y = keras.layers.Add(name=f"{name}_add")([shortcut, y])
    return keras.layers.ReLU(name=f"{name}_out")(y)
