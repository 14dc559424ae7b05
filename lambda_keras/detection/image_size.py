"""The image sides Mask R-CNN takes: multiples of its largest stride (P6, 64)."""

from __future__ import annotations

from lambda_keras import _validation as v

__all__ = ["SIZE_MULTIPLE", "check_image_size", "round_up"]

SIZE_MULTIPLE = 64  # the stride of P6, the coarsest pyramid level
"""The multiple every side of a `MaskRCNN` input must be: the stride of P6, the coarsest level."""


def check_image_size(image_size, name: str = "image_size") -> int:
    """Return ``image_size`` as an int, or raise ``ValueError`` unless it is a positive multiple of
    [`SIZE_MULTIPLE`][lambda_keras.detection.image_size.SIZE_MULTIPLE]."""
    if v.positive_int(name, image_size) % SIZE_MULTIPLE:
        raise ValueError(
            f"`{name}` must be a multiple of {SIZE_MULTIPLE} (MaskRCNN's largest stride, P6); "
            f"received {name}={image_size}."
        )
    return int(image_size)


def round_up(side: int) -> int:
    """The smallest multiple of [`SIZE_MULTIPLE`][lambda_keras.detection.image_size.SIZE_MULTIPLE]
    at least ``side``."""
    return -(-int(side) // SIZE_MULTIPLE) * SIZE_MULTIPLE
