"""What a Mask R-CNN training target may hold, checked where it can be: before training (arrays
and tensors given to ``fit``, what the COCO reader produces) with an error naming the target,
the image and the instance; inside the compiled step (a ``tf.data`` pipeline, a generator),
where nothing can raise, by dropping the bad rows from the loss and counting them.

One rule for both ([target_problems][lambda_keras.detection.target_checks.target_problems]):
a row of the targets (one instance of one image) is **padding** when its class is -1 and may
then hold anything; any other row is bad when

* its class is not in ``[-1, num_classes)``,
* its box (or its ``mask_boxes`` frame) has a coordinate that is NaN or infinite, or
  ``y2 < y1`` or ``x2 < x1`` (boxes are ``(y1, x1, y2, x2)``; an empty box is allowed),
* its mask holds a value that is NaN, infinite or outside ``[0, 1]``.

Shapes ([targets][lambda_keras.detection.targets]): ``boxes [b, G, 4]``, ``classes [b, G]``,
``masks [b, G, M, M]`` and optionally ``mask_boxes [b, G, 4]``.
"""

from __future__ import annotations

import keras
import numpy as np
from keras import ops as K

from lambda_keras.detection.ops._checks import Tensor

__all__ = ["TARGET_KEYS", "check_target_shapes", "check_targets", "target_problems", "usable"]

REQUIRED_KEYS = ("boxes", "classes", "masks")
TARGET_KEYS = (*REQUIRED_KEYS, "mask_boxes")
"""The keys a target dict may hold (``mask_boxes`` optional)."""

_LAYOUTS = {
    "boxes": "[b, G, 4]",
    "classes": "[b, G]",
    "masks": "[b, G, M, M]",
    "mask_boxes": "[b, G, 4]",
}

# What each problem of target_problems means, for the errors.
_ALLOWED = {
    "classes": "class ids must be integers in [-1, {n}) (num_classes={n}; -1 marks a padding row)",
    "boxes": (
        "boxes must be finite (y1, x1, y2, x2) pixels with y1 <= y2 and x1 <= x2 (an "
        "(x1, y1, x2, y2) box must be reordered; padding rows, class -1, may hold anything)"
    ),
    "masks": "masks must hold finite values in [0, 1]",
}


def check_target_shapes(targets) -> None:
    """Raises a ``ValueError`` unless ``targets`` is a dict of the documented shapes (sizes
    that are not known yet are not compared). Works on arrays, tensors and symbolic tensors."""
    if not isinstance(targets, dict) or not set(REQUIRED_KEYS) <= set(targets):
        received = sorted(targets) if isinstance(targets, dict) else type(targets).__name__
        raise ValueError(
            "MaskRCNN trains on (images, {'boxes': [b, G, 4], 'classes': [b, G], 'masks': "
            f"[b, G, M, M]}}) (and optionally 'mask_boxes': [b, G, 4]); received targets "
            f"{received}."
        )
    unknown = sorted(set(targets) - set(TARGET_KEYS))
    if unknown:
        raise ValueError(
            f"MaskRCNN's targets hold only {list(TARGET_KEYS)}; received unknown keys {unknown}."
        )
    shapes = {key: tuple(targets[key].shape) for key in targets}
    leading = shapes["classes"][:2]
    for key, shape in shapes.items():
        ok = len(shape) == _LAYOUTS[key].count(",") + 1 and all(
            a is None or b is None or a == b for a, b in zip(shape[:2], leading, strict=False)
        )
        if key in ("boxes", "mask_boxes"):
            ok = ok and shape[-1] in (None, 4)
        if key == "masks":
            ok = ok and (None in shape[2:] or shape[2] == shape[3])
        if not ok:
            raise ValueError(
                f"`targets[{key!r}]` must have shape {_LAYOUTS[key]} (b images, G instances "
                f"each, as `targets['classes']` {shapes['classes']}); received shape {shape}."
            )


def target_problems(targets: dict, num_classes: int, xp=K) -> dict[str, Tensor]:
    """``{"classes": [b, G], "boxes": [b, G], "masks": [b, G]}``: True where that part of a
    row breaks the rule in this module's docstring (``boxes`` covers ``mask_boxes`` too).

    ``xp``: ``keras.ops`` (tensors, in a compiled step) or ``numpy`` (arrays, before training):
    the same rule either way.
    """
    classes = targets["classes"]
    annotated = classes != -1
    boxes_bad = _bad_boxes(targets["boxes"], xp)
    if "mask_boxes" in targets:
        boxes_bad = boxes_bad | _bad_boxes(targets["mask_boxes"], xp)
    masks = targets["masks"]
    masks_ok = xp.all(xp.isfinite(masks) & (masks >= 0) & (masks <= 1), axis=(-2, -1))
    return {
        "classes": annotated & ((classes < -1) | (classes >= num_classes)),
        "boxes": annotated & boxes_bad,
        "masks": annotated & ~masks_ok,
    }


def _bad_boxes(boxes, xp):
    finite = xp.all(xp.isfinite(boxes), axis=-1)
    inverted = (boxes[..., 2] < boxes[..., 0]) | (boxes[..., 3] < boxes[..., 1])
    return ~finite | inverted


def usable(targets: dict, num_classes: int) -> tuple[dict, Tensor]:
    """``(targets, dropped)`` inside a compiled step: every bad row made padding (class -1),
    every padding row's box, frame and mask made zero (so nothing it held reaches the loss),
    and the float32 number of rows dropped."""
    classes = K.cast(targets["classes"], "int32")
    cast = {key: K.cast(targets[key], "float32") for key in targets if key != "classes"}
    problems = target_problems({**cast, "classes": classes}, num_classes)
    bad = problems["classes"] | problems["boxes"] | problems["masks"]
    classes = K.where(bad, -1, classes)
    keep = classes >= 0
    cleaned = {"classes": classes}
    for key, value in cast.items():
        row = keep
        for _ in range(len(value.shape) - 2):
            row = row[..., None]
        cleaned[key] = K.where(row, value, 0.0)
    return cleaned, K.sum(K.cast(bad, "float32"))


def check_targets(targets, num_classes: int) -> None:
    """Raises a ``ValueError`` naming the first bad value (its target, image and instance) and
    what is allowed, unless every row keeps the rule in this module's docstring.

    Args:
        targets: ``{"boxes", "classes", "masks"[, "mask_boxes"]}`` as arrays or eager tensors
            of any backend.
        num_classes: The model's number of classes.
    """
    check_target_shapes(targets)
    arrays = {key: _numpy(value) for key, value in targets.items()}
    _check_class_dtype(arrays["classes"])
    problems = target_problems(arrays, num_classes, xp=np)
    bad_rows = int((problems["classes"] | problems["boxes"] | problems["masks"]).sum())
    if not bad_rows:
        return
    part = next(name for name, bad in problems.items() if bad.any())
    image, instance = (int(i) for i in np.argwhere(problems[part])[0])
    rows = problems[part].size
    raise ValueError(
        f"{_describe(arrays, part, image, instance)}: {_ALLOWED[part].format(n=num_classes)}. "
        f"Bad rows: {bad_rows} of {rows} (images x instances); the first is shown."
    )


def _numpy(value) -> np.ndarray:
    if isinstance(value, np.ndarray):
        return value
    if keras.ops.is_tensor(value):
        return keras.ops.convert_to_numpy(value)
    return np.asarray(value)


def _check_class_dtype(classes: np.ndarray) -> None:
    if np.issubdtype(classes.dtype, np.integer):
        return
    if np.issubdtype(classes.dtype, np.floating):
        fractional = classes[~(np.isfinite(classes) & (classes == np.round(classes)))]
        if not fractional.size:
            return
        received = f"{classes.dtype} values such as {fractional[0]!r}"
    else:
        received = f"{classes.dtype} values"
    raise ValueError(f"`targets['classes']` must hold integer class ids; received {received}.")


def _describe(arrays: dict, part: str, image: int, instance: int) -> str:
    where = f"of image {image}, instance {instance}"
    if part == "classes":
        return f"`targets['classes']` {where} is {arrays['classes'][image, instance].item()!r}"
    if part == "masks":
        mask = arrays["masks"][image, instance]
        outside = mask[~(np.isfinite(mask) & (mask >= 0) & (mask <= 1))]
        return f"`targets['masks']` {where} holds {outside[0].item()!r}"
    for key in ("boxes", "mask_boxes"):
        if key in arrays and _bad_boxes(arrays[key][image, instance], np):
            box = tuple(float(c) for c in arrays[key][image, instance])
            return f"`targets[{key!r}]` {where} is (y1, x1, y2, x2) = {box}"
    raise AssertionError(part)  # target_problems flagged a box that _bad_boxes does not
