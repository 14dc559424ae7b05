"""A detector's anchor generator: where its anchors lie on each pyramid level, a part passed to
[`MaskRCNN`][lambda_keras.detection.MaskRCNN] (``anchor_generator=``) and saved with it, as
torchvision's ``AnchorGenerator`` is passed to its ``MaskRCNN``.

* [`CentredAnchors`][lambda_keras.detection.anchor_generator.CentredAnchors]: the project's rule,
  anchors centred on their cells, the same for every image of a batch
  ([`pyramid_anchors`][lambda_keras.detection.ops.pyramid_anchors]);
* [`TorchvisionAnchors`][lambda_keras.detection.anchor_generator.TorchvisionAnchors]:
  torchvision's, on the cells' corners with rounded sides and strides of each image's padded size
  ([`torchvision_anchors`][lambda_keras.detection.ops.torchvision_anchors]).

Both take the anchor side per level and the aspect ratios; the model's RPN predicts
``anchors_per_cell`` anchors at each cell.
"""

from __future__ import annotations

import keras
from keras import ops as K

from lambda_keras import _validation as v
from lambda_keras.detection import ops
from lambda_keras.detection.model_part import ModelPart
from lambda_keras.detection.ops._checks import Tensor

__all__ = ["AnchorGenerator", "CentredAnchors", "TorchvisionAnchors"]


class AnchorGenerator(ModelPart):
    """The anchors of a feature pyramid; subclasses say where they lie (``__call__``).

    Args:
        sizes: ``{level: anchor side in pixels}``, a level a positive int (2 for P2); default
            [`DEFAULT_SIZES`][lambda_keras.detection.ops.anchors.DEFAULT_SIZES] (P2-P6).
        aspect_ratios: Heights over widths, the same at every level.
    """

    def __init__(
        self,
        sizes: dict[int, float] | None = None,
        aspect_ratios: tuple[float, ...] = ops.DEFAULT_ASPECT_RATIOS,
    ):
        sizes = ops.DEFAULT_SIZES if sizes is None else sizes
        if not isinstance(sizes, dict) or not sizes:
            raise TypeError(f"`sizes` must be a dict {{level: side}}; received {sizes!r}.")
        sides = {_level(level, sizes): v.positive_number("sizes", s) for level, s in sizes.items()}
        self.sizes = dict(sorted(sides.items()))
        allowed = "numbers (heights over widths, e.g. (0.5, 1.0, 2.0))"
        ratios = v.sequence("aspect_ratios", aspect_ratios, allowed)
        if not ratios:
            raise ValueError(f"`aspect_ratios` must be {allowed}; received aspect_ratios=().")
        self.aspect_ratios = tuple(v.positive_number("aspect_ratios", r) for r in ratios)

    @property
    def anchors_per_cell(self) -> int:
        """Anchors at each cell of a level: one per aspect ratio."""
        return len(self.aspect_ratios)

    @property
    def levels(self) -> tuple[str, ...]:
        """The pyramid levels the anchors cover, ``("P2", ..., "P6")`` by default."""
        return tuple(f"P{level}" for level in self.sizes)

    def __call__(
        self, canvas: tuple[int, int], image_sizes: Tensor | None = None
    ) -> tuple[dict[str, Tensor], dict[str, Tensor] | None]:
        """``(anchors, valid)`` for a batch of ``canvas = (height, width)``.

        Args:
            canvas: The batch's static ``(height, width)``, multiples of the largest stride.
            image_sizes: ``[batch, 2]`` int, each image's (padded) size inside the canvas, or
                None when every image fills it.

        Returns:
            ``{"P<l>": [n_l, 4]}`` boxes for every image alike and None, or per image
            ``{"P<l>": [batch, n_l, 4]}`` and their validity ``{"P<l>": [batch, n_l]}``.
        """
        raise NotImplementedError

    def get_config(self) -> dict:
        return {"sizes": dict(self.sizes), "aspect_ratios": self.aspect_ratios}

    @classmethod
    def from_config(cls, config: dict) -> AnchorGenerator:
        config = dict(config)  # JSON turns the levels into strings, the ratios into a list
        config["sizes"] = {  # a level that is not digits: the constructor names it
            int(level) if str(level).isdigit() else level: side
            for level, side in config["sizes"].items()
        }
        config["aspect_ratios"] = tuple(config["aspect_ratios"])
        return cls(**config)


def _canvas(canvas) -> tuple[int, int]:
    """``canvas`` as ``(height, width)``, two positive ints, or a ``TypeError``/``ValueError``
    naming it (one int, a triple or None would otherwise fail deep in the anchors' ops)."""
    allowed = "the batch's static (height, width), two positive integers"
    if hasattr(canvas, "as_list"):  # a TensorFlow shape: images.shape[1:3]
        canvas = tuple(canvas.as_list())
    sides = v.sequence("canvas", canvas, allowed)
    if len(sides) != 2:
        raise ValueError(f"`canvas` must be {allowed}; received canvas={canvas!r}.")
    return tuple(v.positive_int(f"canvas[{i}]", side) for i, side in enumerate(sides))


def _level(level, sizes: dict) -> int:
    """A key of ``sizes``: a pyramid level, a positive int (2 for P2; not 2.7, "P2" or True)."""
    try:
        return v.positive_int("sizes", level)
    except ValueError:
        raise ValueError(
            "`sizes` must map pyramid levels (positive integers: 2 for P2) to anchor sides in "
            f"pixels; received the level {level!r} in sizes={sizes!r}."
        ) from None


@keras.saving.register_keras_serializable(package="lambda_keras")
class CentredAnchors(AnchorGenerator):
    """Anchors centred on their cells, the same for every image (the project's models). Given
    each image's size, the anchors of cells beyond it are not valid (they never propose), so an
    image's detections do not depend on the canvas it is padded into.

    Examples:
        >>> anchors, valid = CentredAnchors()((64, 64))
        >>> tuple(anchors["P2"].shape), valid
        ((768, 4), None)
        >>> import numpy as np
        >>> anchors, valid = CentredAnchors()((64, 128), [[64, 64]])
        >>> inside = np.asarray(valid["P2"])  # the image's half of the canvas
        >>> tuple(anchors["P2"].shape), inside.shape, int(inside.sum())
        ((1536, 4), (1, 1536), 768)
    """

    def __call__(self, canvas, image_sizes=None):
        canvas = _canvas(canvas)
        anchors = ops.pyramid_anchors(canvas, self.sizes, self.aspect_ratios)
        if image_sizes is None:  # every image fills the canvas
            return anchors, None
        count = len(self.aspect_ratios)
        valid = {
            f"P{level}": ops.anchors_inside(canvas, image_sizes, level, count)
            for level in sorted(self.sizes)
        }
        return anchors, valid


@keras.saving.register_keras_serializable(package="lambda_keras")
class TorchvisionAnchors(AnchorGenerator):
    """torchvision's ``AnchorGenerator``: on the cells' corners, sides rounded, strides of each
    image's padded size (converted torchvision models).

    Examples:
        >>> anchors, valid = TorchvisionAnchors()((64, 128), [[64, 96]])
        >>> tuple(anchors["P2"].shape), tuple(valid["P2"].shape)
        ((1, 1536, 4), (1, 1536))
    """

    def __call__(self, canvas, image_sizes=None):
        canvas = _canvas(canvas)
        if image_sizes is None:  # every image fills the batch: one set of anchors
            whole = K.convert_to_tensor([canvas])
            anchors, _ = ops.torchvision_anchors(canvas, whole, self.sizes, self.aspect_ratios)
            return {level: boxes[0] for level, boxes in anchors.items()}, None
        return ops.torchvision_anchors(canvas, image_sizes, self.sizes, self.aspect_ratios)
