"""Anchors of a feature pyramid (Faster R-CNN / FPN), in the box convention of
:mod:`lambda_keras.detection.ops.boxes`.

Level ``l`` has stride ``2**l``; its anchors are centred on the centres of its cells,
``((i + 0.5) 2**l, (j + 0.5) 2**l)`` in image pixels (the half-pixel rule ROIAlign uses;
torchvision and Detectron2 centre them on the cells' top-left corners instead). At each cell,
one anchor per aspect ratio ``height / width`` with area ``size**2``. Ordered level by level,
then row-major over the cells, then by aspect ratio: the order in which a head's
``[batch, h, w, num_ratios * k]`` output flattens.
"""

from __future__ import annotations

import math

import tensorflow as tf

from lambda_keras import _validation as v

__all__ = ["DEFAULT_ASPECT_RATIOS", "DEFAULT_SIZES", "pyramid_anchors"]

# Mask R-CNN with FPN (He et al., 2017): one size per level P2..P6, three aspect ratios.
DEFAULT_SIZES = {2: 32.0, 3: 64.0, 4: 128.0, 5: 256.0, 6: 512.0}
DEFAULT_ASPECT_RATIOS = (0.5, 1.0, 2.0)


def pyramid_anchors(
    image_size: tuple[int, int],
    sizes: dict[int, float] | None = None,
    aspect_ratios: tuple[float, ...] = DEFAULT_ASPECT_RATIOS,
) -> dict[str, tf.Tensor]:
    """The anchors of every level for images of ``image_size``.

    Args:
        image_size: ``(height, width)``, multiples of the largest stride.
        sizes: ``{level: anchor side}``; default :data:`DEFAULT_SIZES` (P2..P6).
        aspect_ratios: Heights over widths.

    Returns:
        ``{"P<level>": [h_level * w_level * len(aspect_ratios), 4]}`` float32 boxes.
    """
    sizes = DEFAULT_SIZES if sizes is None else sizes
    height = v.positive_int("image_size[0]", image_size[0])
    width = v.positive_int("image_size[1]", image_size[1])
    ratios = [v.positive_number("aspect_ratios", r) for r in aspect_ratios]
    stride = 2 ** max(sizes)
    if height % stride or width % stride:
        raise ValueError(
            f"`image_size` must be a multiple of the largest stride {stride}; received "
            f"image_size={tuple(image_size)}."
        )
    return {
        f"P{level}": _level_anchors(height, width, level, v.positive_number("sizes", size), ratios)
        for level, size in sorted(sizes.items())
    }


def _level_anchors(height: int, width: int, level: int, size: float, ratios) -> tf.Tensor:
    stride = 2**level
    # Half-heights and half-widths of one cell's anchors: area size**2, height / width = ratio.
    half = tf.constant(
        [[size * math.sqrt(r) / 2, size / math.sqrt(r) / 2] for r in ratios], tf.float32
    )  # [A, 2]
    ys = (tf.range(height // stride, dtype=tf.float32) + 0.5) * stride
    xs = (tf.range(width // stride, dtype=tf.float32) + 0.5) * stride
    cy, cx = tf.meshgrid(ys, xs, indexing="ij")
    centres = tf.stack([cy, cx], -1)[:, :, None, :]  # [h, w, 1, 2]
    boxes = tf.concat([centres - half, centres + half], -1)  # [h, w, A, 4]
    return tf.reshape(boxes, [-1, 4])
