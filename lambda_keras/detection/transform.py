"""A detector's input transform: how a photo becomes the model's input, and how the model's
boxes and masks go back into the photo (torchvision's ``GeneralizedRCNNTransform``'s job).

Each [`MaskRCNN`][lambda_keras.detection.MaskRCNN] owns one (``model.input_transform()``); serving
([`lambda_keras.detection.serving`][lambda_keras.detection.serving]) asks the model for it instead
of knowing models apart.

* [`LetterboxTransform`][lambda_keras.detection.transform.LetterboxTransform]: the project's rule,
  as in training and evaluation
  ([`coco`][lambda_keras.training.detection.datasets.coco]): the longer side scaled
  to ``image_size``, the image padded at the bottom and right to a square; boxes scaled back and
  clipped to the photo, masks pasted by [`paste_masks`][lambda_keras.detection.ops.paste_masks].
* [`TorchvisionTransform`][lambda_keras.detection.transform.TorchvisionTransform]: torchvision's
  rule (shorter side 800, longer at most 1333, float64 sizes), each image padded to a multiple of 32
  inside a batch whose sides are multiples of 64 (`detect` on a compiled backend: the smallest of
  832 x 832, 832 x 1088, 832 x 1216 and 832 x 1344, or those turned for an upright photo; the
  serving graph: 832 x 1344, or 1344 x 832 for an upright photo); boxes scaled back per axis,
  masks pasted by [`paste_masks_torchvision`][lambda_keras.detection.ops.paste_masks_torchvision]
  and thresholded at 0.5.

Each transform gives the resized size of a photo in Python
([`resized_size`][lambda_keras.detection.transform.LetterboxTransform.resized_size], for
[`detect`][lambda_keras.detection.detect.detect] on every backend) and maps outputs back with
``keras.ops`` ([`to_photo`][lambda_keras.detection.transform.LetterboxTransform.to_photo], eager or
inside the serving graph); inside TensorFlow graphs, where the photo's size is known only at run
time, ``lambda_keras.detection.transform_graph`` computes the same sizes (``tf.data`` pipelines,
SavedModel and LiteRT serving).
"""

from __future__ import annotations

import math

import keras
import numpy as np
from keras import ops as K

from lambda_keras import _validation as v
from lambda_keras.detection import ops
from lambda_keras.detection.image_size import check_image_size, round_up
from lambda_keras.detection.model_part import ModelPart
from lambda_keras.detection.ops._checks import Tensor

__all__ = ["InputTransform", "LetterboxTransform", "TorchvisionTransform"]


def _photo_sides(height, width) -> tuple[int, int]:
    """``(height, width)`` as ints, or raise ``ValueError`` naming the side that is not a
    positive integer (``resized_size``'s photo)."""
    return v.positive_int("height", height), v.positive_int("width", width)


class InputTransform(ModelPart):
    """What every input transform gives: its serving form at a size
    ([`at_size`][lambda_keras.detection.transform.InputTransform.at_size]), the resized size of a
    photo in Python (``resized_size``) and inside a TensorFlow graph (``graph_resize``), the
    canvases a photo may be padded to (``canvas`` for ``detect``: the smallest of a few,
    ``compiled_canvas``, or the smallest that holds the photo; ``canvases``: the serving graph's
    fixed ones), the model's input for one padded photo (``model_inputs``) and the way back
    into the photo (``to_photo``; for ``detect``, the same as ``boxes_to_photo`` and
    ``masks_on_host``, the masks pasted with NumPy box by box); ``size_divisible``: the
    multiple each image is padded to inside a larger batch (None: each image fills its canvas).
    Saved with the model (``get_config``)."""

    size_divisible: int | None = None

    def at_size(self, image_size: int | None) -> InputTransform:
        """The transform a photo is served with: ``image_size`` (a multiple of 64) asks for the
        project's letterbox at that size, whatever the model's own transform; None for the
        model's own."""
        if image_size is not None:
            return LetterboxTransform(image_size)
        return self

    def canvas(self, size, *, smallest: bool = False) -> tuple[int, int]:
        """The canvas [`detect`][lambda_keras.detection.detect] pads an image of resized ``size``
        (``(height, width)`` ints) to. By default the smallest of a few canvases that holds it
        (``compiled_canvas``: for backends that compile one program per shape, a few programs
        for photos of every size); with ``smallest`` and a transform that pads within a batch
        (``size_divisible``), each side rounded up to a multiple of 64 (less to compute where
        each shape runs as it comes)."""
        if smallest and self.size_divisible is not None:
            return (round_up(size[0]), round_up(size[1]))
        return self.compiled_canvas(size)

    def compiled_canvas(self, size) -> tuple[int, int]:
        """The canvas of the program an image of resized ``size`` runs in where each canvas is
        compiled once: the first of ``canvases``' for its orientation."""
        canvases, first = self.canvases(size)
        return canvases[0] if first is None or first else canvases[1]


@keras.saving.register_keras_serializable(package="lambda_keras")
class LetterboxTransform(InputTransform):
    """The project's transform (module docstring), a ``MaskRCNN``'s default.

    Args:
        image_size: The square side (a multiple of 64), or None: a project ``MaskRCNN`` detects
            at any multiple of 64, so the size may be chosen where the model is served
            (``export_detector(model, path, image_size)``, ``detect(model, image, image_size)``).
            A size given here is saved with the model and served by default.

    Examples:
        >>> LetterboxTransform(256).resized_size(480, 640)
        (192, 256)
        >>> LetterboxTransform().at_size(128)
        LetterboxTransform({'image_size': 128})
    """

    size_divisible = None  # each image fills the square it is padded into

    def __init__(self, image_size: int | None = None):
        self.image_size = None if image_size is None else check_image_size(image_size)

    def at_size(self, image_size: int | None) -> LetterboxTransform:
        if image_size is None and self.image_size is None:
            raise ValueError(
                "`image_size` is needed to serve this MaskRCNN (the side it detects at, a "
                "multiple of 64): its letterbox transform has no size of its own."
            )
        return LetterboxTransform(image_size or self.image_size)

    def get_config(self) -> dict:
        return {"image_size": self.image_size}

    def _side(self) -> int:
        if self.image_size is None:
            raise ValueError(
                "This LetterboxTransform has no `image_size`: call `at_size(image_size)` first."
            )
        return self.image_size

    def resized_size(self, height: int, width: int) -> tuple[int, int]:
        """The letterbox rule on a ``height x width`` photo: the longer side to
        ``image_size``, each side rounded (half to even, in float32 as the graph computes it)
        and at least 1.

        Raises:
            ValueError: If ``height`` or ``width`` is not a positive integer.
        """
        height, width = _photo_sides(height, width)
        shape = np.array([height, width], np.float32)
        scale = np.float32(self._side()) / shape.max()
        h, w = np.maximum(np.round(shape * scale), 1).astype(int).tolist()
        return h, w

    def graph_resize(self, image, float64: bool = True):
        """``(resized float32 [h, w, 3], (h, w) int32)``: ``resized_size``'s rule on one photo
        inside a TensorFlow graph, where its size is known only at run time (``float64`` is
        torchvision's flag: the letterbox has no float64 step)."""
        import tensorflow as tf

        from lambda_keras.detection.transform_graph import letterbox_size

        del float64
        _, size = letterbox_size(tf.shape(image)[:2], self._side())
        return tf.image.resize(tf.cast(image, tf.float32), size), size

    def canvases(self, size) -> tuple[list[tuple[int, int]], Tensor | None]:
        """``(canvases, first)``: the batch sizes an image of ``size`` may be padded to, and
        whether it is the first (None when there is one)."""
        del size
        return [(self._side(), self._side())], None

    def model_inputs(self, padded: Tensor, size: Tensor):
        """The model's input for one padded image: the image alone (it fills the square,
        as in training)."""
        del size
        return padded[None]

    def to_photo(self, boxes: Tensor, masks: Tensor, size: Tensor, shape: Tensor):
        """``(boxes [D, 4] in the photo's pixels, bool masks [D, height, width])`` from the
        model's ``boxes [D, 4]`` and ``masks [D, M, M]``; ``shape`` is the photo's
        ``(height, width)``."""
        boxes = self.boxes_to_photo(boxes, size, shape)
        return boxes, ops.paste_masks(masks, boxes, shape)

    def boxes_to_photo(self, boxes: Tensor, size: Tensor, shape: Tensor) -> Tensor:
        """``to_photo``'s boxes alone."""
        del size
        scale = self._side() / K.max(K.cast(shape, "float32"))
        return ops.clip_boxes(boxes / scale, shape)

    def masks_on_host(
        self, masks: np.ndarray, boxes: np.ndarray, shape: tuple[int, int], keep: np.ndarray
    ) -> np.ndarray:
        """``to_photo``'s masks computed with NumPy for the ``keep`` rows only (the others
        empty), from ``boxes`` already in the photo's pixels (``boxes_to_photo``): bool ``[D,
        height, width]`` for [`detect`][lambda_keras.detection.detect]."""
        return ops.paste_masks_on_host(masks, boxes, shape, keep)


@keras.saving.register_keras_serializable(package="lambda_keras")
class TorchvisionTransform(InputTransform):
    """torchvision's ``GeneralizedRCNNTransform`` (module docstring).

    Args:
        min_size: The shorter side's target (torchvision's 800).
        max_size: The longer side's limit (torchvision's 1333).
        size_divisible: Each image is padded to a multiple of it (torchvision's 32); the model
            zeroes its maps beyond that part of a larger batch.
    """

    def __init__(self, min_size: int = 800, max_size: int = 1333, size_divisible: int = 32):
        self.min_size = v.positive_int("min_size", min_size)
        self.max_size = v.positive_int("max_size", max_size)
        self.size_divisible = v.positive_int("size_divisible", size_divisible)
        if self.max_size < self.min_size:
            raise ValueError(
                f"`max_size` must be at least `min_size`; received min_size={min_size}, "
                f"max_size={max_size}."
            )

    def resized_size(self, height: int, width: int) -> tuple[int, int]:
        """torchvision's rule: scale ``min(min_size / shorter, max_size / longer)`` in float64,
        each side ``floor(side * scale)`` and at least 1 (a side that floors to 0, on a photo
        more than ``max_size`` times longer than it is short, is one pixel here; torchvision
        refuses to resize to 0).

        Raises:
            ValueError: If ``height`` or ``width`` is not a positive integer.
        """
        height, width = _photo_sides(height, width)
        scale = min(self.min_size / min(height, width), self.max_size / max(height, width))
        return max(math.floor(height * scale), 1), max(math.floor(width * scale), 1)

    def graph_resize(self, image, float64: bool = True):
        """``(resized float32 [h, w, 3], (h, w) int32)``: ``resized_size``'s rule on one photo
        inside a TensorFlow graph
        ([`torchvision_resize`][lambda_keras.detection.transform_graph.torchvision_resize];
        ``float64=False`` computes the sizes in integers, for LiteRT)."""
        from lambda_keras.detection.transform_graph import torchvision_resize

        return torchvision_resize(image, self.min_size, self.max_size, float64)

    def canvases(self, size) -> tuple[list[tuple[int, int]], Tensor | None]:
        """The serving graph's two canvases: a landscape batch for a landscape (or square)
        image, an upright one otherwise."""
        short, long = round_up(self.min_size), round_up(self.max_size)
        return [(short, long), (long, short)], size[0] <= size[1]

    def long_sides(self) -> tuple[int, ...]:
        """The longer sides of ``compiled_canvas``' canvases: the resized longer side of a
        square, 4:3, 3:2 and the longest photo, each rounded up to a multiple of 64 (832, 1088,
        1216 and 1344 at torchvision's sizes)."""
        longest = round_up(self.max_size)
        sides = {min(round_up(self.min_size * ratio), longest) for ratio in (1.0, 4 / 3, 3 / 2)}
        return tuple(sorted(sides | {longest}))

    def compiled_canvas(self, size) -> tuple[int, int]:
        """The smallest of the canvases ``(short, long)`` and ``(long, short)`` that holds the
        image: ``short`` is ``min_size`` rounded up to a multiple of 64 and ``long`` the first of
        ``long_sides`` that holds the longer side. At most seven programs, whatever the photos'
        sizes; a square photo takes 832 x 832 at torchvision's sizes, a 3:2 one 832 x 1216."""
        height, width = (int(side) for side in size)
        short = max(round_up(self.min_size), round_up(min(height, width)))
        longer = max(height, width)
        long = next((s for s in self.long_sides() if s >= longer), round_up(longer))
        return (short, long) if height <= width else (long, short)

    def model_inputs(self, padded: Tensor, size: Tensor):
        return {"images": padded[None], "image_sizes": K.convert_to_tensor(size, "int32")[None]}

    def to_photo(self, boxes: Tensor, masks: Tensor, size: Tensor, shape: Tensor):
        boxes = self.boxes_to_photo(boxes, size, shape)
        return boxes, ops.paste_masks_torchvision(masks, boxes, shape) >= 0.5

    def boxes_to_photo(self, boxes: Tensor, size: Tensor, shape: Tensor) -> Tensor:
        ratio = K.cast(shape, "float32") / K.cast(size, "float32")
        return boxes * K.concatenate([ratio, ratio], 0)

    def masks_on_host(
        self, masks: np.ndarray, boxes: np.ndarray, shape: tuple[int, int], keep: np.ndarray
    ) -> np.ndarray:
        return ops.paste_masks_torchvision_on_host(masks, boxes, shape, keep)

    def get_config(self) -> dict:
        return {
            "min_size": self.min_size,
            "max_size": self.max_size,
            "size_divisible": self.size_divisible,
        }
