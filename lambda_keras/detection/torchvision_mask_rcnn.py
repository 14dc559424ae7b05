"""torchvision's ``maskrcnn_resnet50_fpn`` (v1) as a :class:`~lambda_keras.detection.MaskRCNN`.

:func:`maskrcnn_resnet50_fpn` builds it; ``weights="coco"`` gives torchvision's COCO model
(box AP 37.9, mask AP 34.6 on COCO val2017 by torchvision's figures) converted by
:mod:`lambda_keras.detection.convert_torchvision`.

What makes it torchvision's and not the project's own Mask R-CNN (:mod:`.mask_rcnn`):

* backbone: ResNet-50 v1.5 with frozen batch norm (:mod:`.torchvision_resnet`); anchors on the
  cells' corners with rounded sides (:func:`~lambda_keras.detection.ops.torchvision_anchors`);
  ROIAlign without the half-pixel shift (``aligned=False``); proposals smaller than 1e-3 and
  detections smaller than 1e-2 pixels dropped; RPN 2000/2000 (train) and 1000/1000 (test)
  boxes before/after NMS;
* input: ``{"images": [b, H, W, 3], "image_sizes": [b, 2]}`` (or the images alone, each filling
  the batch): each image resized by torchvision's rule (:func:`torchvision_resize`: shorter
  side 800, longer at most 1333) and placed at the top left of a batch whose sides are
  multiples of 64. torchvision pads each image to a multiple of 32 only; every map is zeroed
  beyond that (:mod:`.valid_region`) and boxes are clipped to the image, so each image gives
  torchvision's detections for it alone, whatever the batch size (a static shape for XLA);
* classes: the project's 0-based classes, torchvision's label minus 1 (COCO's category id
  minus 1 for the COCO model); ``categories`` carries each class's COCO id and name.

Left as they are (training only): the mask targets are ROIAligned with the half-pixel rule
(torchvision: ``aligned=False`` and adaptive sampling), and RoIs are sampled as in
:mod:`.targets`.
"""

from __future__ import annotations

import keras
import tensorflow as tf

from lambda_keras.detection import ops
from lambda_keras.detection.detections import select_detections
from lambda_keras.detection.mask_rcnn import MaskRCNN, _check_images, _pick_class
from lambda_keras.detection.proposals import generate_proposals
from lambda_keras.detection.valid_region import zero_outside
from lambda_keras.preprocessing import normalize

__all__ = ["TORCHVISION_PAD", "TorchvisionMaskRCNN", "torchvision_resize"]

TORCHVISION_PAD = 32  # torchvision's size_divisible: each image is padded to a multiple of it
MIN_SIZE, MAX_SIZE = 800, 1333  # GeneralizedRCNNTransform's defaults


def torchvision_resize(
    image: tf.Tensor, min_size: int = MIN_SIZE, max_size: int = MAX_SIZE, float64: bool = True
):
    """Resize one ``[height, width, 3]`` image as torchvision's ``GeneralizedRCNNTransform``
    does: scale ``min(min_size / shorter, max_size / longer)`` (float64), each side
    ``floor(side * scale)``, bilinear without antialiasing (``align_corners=False``).

    ``float64=False`` computes the sizes in integers instead, ``floor(side * min_size /
    shorter)`` exactly (LiteRT has no float64 kernels). torchvision's float64 product is
    sometimes just below a whole number it should reach: a shorter side of 97 pixels becomes
    799 there, 800 here (397 of the shorter sides 1-7,999 do so).

    Returns:
        ``(resized float32 [h, w, 3], (h, w) int32)``.
    """
    if float64:
        shape = tf.cast(tf.shape(image)[:2], tf.float64)
        scale = tf.minimum(min_size / tf.reduce_min(shape), max_size / tf.reduce_max(shape))
        size = tf.cast(tf.floor(shape * scale), tf.int32)
    else:
        shape = tf.shape(image)[:2]
        short, long = tf.reduce_min(shape), tf.reduce_max(shape)
        by_short = min_size * long <= max_size * short  # min_size / short is the smaller scale
        size = tf.where(by_short, shape * min_size // short, shape * max_size // long)
    resized = tf.image.resize(tf.cast(image, tf.float32), size, method="bilinear")
    return resized, size


@keras.saving.register_keras_serializable(package="lambda_keras")
class TorchvisionMaskRCNN(MaskRCNN):
    """torchvision's Mask R-CNN rules on :class:`MaskRCNN`'s layers (module docstring).

    Args (beyond :class:`MaskRCNN`'s):
        categories: ``[{"id": ..., "name": ...}]`` per class (e.g. COCO's), or None.
        detection_candidates: (box, class) pairs kept before the final NMS (torchvision keeps
            every pair above ``score_threshold``; a fixed number keeps shapes static).
    """

    def __init__(
        self,
        backbone: keras.Model,
        num_classes: int,
        *,
        categories: list[dict] | None = None,
        detection_candidates: int = 4000,
        rpn_top_k: tuple[int, int, int, int] = (2000, 2000, 1000, 1000),
        **kwargs,
    ):
        super().__init__(backbone, num_classes, rpn_top_k=rpn_top_k, **kwargs)
        self.categories = _check_categories(categories, self.num_classes)
        self.detection_candidates = int(detection_candidates)

    def __call__(self, inputs, *args, **kwargs):
        if isinstance(inputs, dict):
            inputs = _check_inputs(inputs)
        elif hasattr(inputs, "shape"):
            _check_images(tuple(inputs.shape))
        return keras.Model.__call__(self, inputs, *args, **kwargs)

    # ------------------------------------------------------------------ shared
    def _features(self, images, training, image_sizes=None):
        """``(canvas (h, w), FPN maps)``; each map zero beyond each image's padded part."""
        canvas, image_sizes, padded = _sizes(images, image_sizes)
        return canvas, self._pyramid(images, image_sizes, padded, training)

    def _pyramid(self, images, image_sizes, padded, training):
        x = zero_outside(normalize(tf.cast(images, self.compute_dtype)), image_sizes, 1)
        features = self.backbone({"images": x, "valid_sizes": padded}, training=training)
        return self.fpn(features, valid_sizes=padded)

    def _roi_features(self, features, boxes, size, valid_sizes=None):
        pyramid = {level: features[level] for level in ("P2", "P3", "P4", "P5")}
        return ops.multilevel_roi_align(
            pyramid, boxes, size, sampling_ratio=2, aligned=False, valid_sizes=valid_sizes
        )

    def _proposals(self, features, image_size, training, image_sizes=None):
        objectness, deltas = self.rpn_head(features)
        pre, post = self.rpn_top_k[:2] if training else self.rpn_top_k[2:]
        if image_sizes is None:  # every image fills the batch: one set of anchors
            anchors, _ = ops.torchvision_anchors(image_size, tf.constant([image_size]))
            anchors = {level: boxes[0] for level, boxes in anchors.items()}
            valid, clip_to = None, image_size
        else:
            anchors, valid = ops.torchvision_anchors(image_size, _padded(image_sizes))
            clip_to = image_sizes
        proposals = generate_proposals(
            objectness,
            deltas,
            anchors,
            clip_to,
            pre_nms_top_k=pre,
            post_nms_top_k=post,
            min_size=1e-3,
            anchors_valid=valid,
        )
        return objectness, deltas, anchors, proposals

    # ------------------------------------------------------------------ inference
    def call(self, inputs, training=False):
        images, image_sizes = inputs, None
        if isinstance(inputs, dict):
            images, image_sizes = inputs["images"], inputs["image_sizes"]
        canvas, image_sizes, padded = _sizes(images, image_sizes)
        features = self._pyramid(images, image_sizes, padded, training)
        _, _, _, (rois, rois_valid) = self._proposals(features, canvas, False, image_sizes)
        logits, deltas = self.box_head(self._roi_features(features, rois, 7, padded))
        detections = select_detections(
            logits,
            deltas,
            rois,
            rois_valid,
            image_sizes,
            max_detections=self.max_detections,
            score_threshold=self.score_threshold,
            candidates=self.detection_candidates,
            min_size=1e-2,
        )
        mask_logits = self.mask_head(self._roi_features(features, detections["boxes"], 14, padded))
        masks = _pick_class(mask_logits, tf.maximum(detections["classes"], 0))
        detections["masks"] = tf.sigmoid(tf.cast(masks, tf.float32))
        return detections

    def get_config(self):
        return {
            **super().get_config(),
            "categories": self.categories,
            "detection_candidates": self.detection_candidates,
        }


def _check_inputs(inputs: dict) -> dict:
    """``{"images": [b, H, W, 3], "image_sizes": [b, 2]}``, the sizes as int32."""
    if set(inputs) != {"images", "image_sizes"}:
        raise ValueError(
            "TorchvisionMaskRCNN takes images [batch, height, width, 3] or {'images': ..., "
            f"'image_sizes': [batch, 2]}}; received a dict with keys {sorted(inputs)}."
        )
    images = inputs["images"]
    _check_images(tuple(images.shape))
    sizes = tf.convert_to_tensor(inputs["image_sizes"])
    if sizes.shape.rank != 2 or sizes.shape[-1] != 2 or not sizes.dtype.is_integer:
        raise ValueError(
            "`image_sizes` must be integers [batch, 2], each image's (height, width) inside "
            f"the batch; received {sizes.dtype.name} of shape {tuple(sizes.shape)}."
        )
    return {"images": images, "image_sizes": tf.cast(sizes, tf.int32)}


def _sizes(images, image_sizes):
    """``(canvas (h, w), image_sizes [b, 2] int32, padded sizes [b, 2] int32)``."""
    canvas = tuple(int(side) for side in images.shape[1:3])
    if image_sizes is None:
        image_sizes = tf.tile(tf.constant([canvas], tf.int32), [tf.shape(images)[0], 1])
    image_sizes = tf.minimum(tf.cast(image_sizes, tf.int32), tf.constant(canvas, tf.int32))
    return canvas, image_sizes, _padded(image_sizes)


def _padded(image_sizes):
    return -(-tf.cast(image_sizes, tf.int32) // TORCHVISION_PAD) * TORCHVISION_PAD


def _check_categories(categories, num_classes: int):
    if categories is None:
        return None
    categories = [dict(c) for c in categories]
    if len(categories) != num_classes or not all(
        isinstance(c.get("id"), int) and isinstance(c.get("name"), str) for c in categories
    ):
        raise ValueError(
            f"`categories` must hold one {{'id': int, 'name': str}} per class ({num_classes}); "
            f"received {len(categories)} entries, first {categories[:1]}."
        )
    return categories
