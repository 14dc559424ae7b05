"""A tiny pyramid backbone, a tiny Mask R-CNN on it and synthetic padded ground truth for fast
detection tests."""

import keras
import numpy as np

# Heads small enough for a CPU test run (the defaults are the paper's).
TINY_HEADS = {
    "fpn_channels": 16,
    "rpn_top_k": (100, 50, 50, 40),
    "rois_per_image": 32,
    "box_head_units": 32,
    "mask_head_channels": 8,
    "max_detections": 10,
}


def tiny_backbone(channels: int = 8) -> keras.Model:
    """Four strided conv stages: ``{"P2": stride 4, ..., "P5": stride 32}``."""
    images = keras.Input((None, None, 3))
    x = keras.layers.Conv2D(channels, 3, strides=4, padding="same", activation="relu")(images)
    outputs = {"P2": x}
    for level in (3, 4, 5):
        x = keras.layers.Conv2D(channels, 3, strides=2, padding="same", activation="relu")(x)
        outputs[f"P{level}"] = x
    return keras.Model(images, outputs)


def tiny_detector(backbone: keras.Model | None = None, **kwargs):
    """A 3-class ``MaskRCNN`` on :func:`tiny_backbone` with :data:`TINY_HEADS` (``kwargs``
    override them)."""
    from lambda_keras.detection import MaskRCNN

    return MaskRCNN(backbone or tiny_backbone(), num_classes=3, **{**TINY_HEADS, **kwargs})


def synthetic_batch(batch=2, size=64, max_instances=4, mask_size=16, num_classes=3, seed=0):
    """Images with up to 2 boxes each (the rest padding, class -1), masks in box frames."""
    rng = np.random.default_rng(seed)
    images = rng.uniform(0, 255, (batch, size, size, 3)).astype("float32")
    boxes = np.zeros((batch, max_instances, 4), "float32")
    classes = -np.ones((batch, max_instances), "int32")
    masks = np.zeros((batch, max_instances, mask_size, mask_size), "float32")
    for i in range(batch):
        for g in range(2):
            y, x = rng.uniform(0, size / 2, 2)
            h, w = rng.uniform(12, size / 2, 2)
            boxes[i, g] = [y, x, y + h, x + w]
            classes[i, g] = rng.integers(0, num_classes)
            masks[i, g, 2:-2, 2:-2] = 1.0
    return images, {"boxes": boxes, "classes": classes, "masks": masks}


def tiny_valid_backbone(channels: int = 8) -> keras.Model:
    """:func:`tiny_backbone` taking ``{"images", "valid_sizes"}`` and zeroing every map beyond
    each image's valid part (as torchvision's ResNet-50 port does)."""
    from lambda_keras.detection.valid_region import ZeroOutside

    images = keras.Input((None, None, 3), name="images")
    valid_sizes = keras.Input((2,), dtype="int32", name="valid_sizes")
    x = keras.layers.Conv2D(channels, 3, strides=4, padding="same", activation="relu")(images)
    x = ZeroOutside(4)([x, valid_sizes])
    outputs = {"P2": x}
    for level in (3, 4, 5):
        x = keras.layers.Conv2D(channels, 3, strides=2, padding="same", activation="relu")(x)
        x = ZeroOutside(2**level)([x, valid_sizes])
        outputs[f"P{level}"] = x
    return keras.Model({"images": images, "valid_sizes": valid_sizes}, outputs)
