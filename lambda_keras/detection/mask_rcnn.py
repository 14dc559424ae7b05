"""Mask R-CNN (He et al., 2017) with FPN on a pyramid backbone, as a ``keras.Model``.

``fit`` trains it on ``(images, targets)`` batches, ``predict``/``call`` detects. Every shape is
static once the image size is (ground truth padded to a fixed number of instances, fixed-size
proposal, RoI and detection sets, padded NMS), so the training step compiles with XLA.

* Images: ``[batch, height, width, 3]`` RGB in ``[0, 255]`` (normalised inside with the
  ImageNet mean and standard deviation), height and width multiples of 64 and known when the
  model is traced (the anchors are built for them).
* Targets: ``{"boxes": [b, G, 4], "classes": [b, G] int32, "masks": [b, G, M, M]}``, see
  :mod:`lambda_keras.detection.targets` (``-1`` classes pad; masks in their boxes' frames),
  optionally ``"mask_boxes": [b, G, 4]``, the frames of the masks when they differ from the
  boxes (a box clipped by a crop; :func:`lambda_keras.detection.coco.make_dataset` gives them).
* Outputs: ``{"boxes": [b, D, 4], "scores": [b, D], "classes": [b, D] (-1 padding),
  "masks": [b, D, 28, 28] probabilities inside each box, "valid": [b, D]}`` in the input
  image's pixels; :func:`lambda_keras.detection.ops.paste_masks` puts masks into the image.

The defaults are the standard Mask R-CNN's (Detectron2 / torchvision): anchors 32-512 on P2-P6
with ratios 0.5, 1, 2; RPN 256 anchors per image at 50% positives (IoU 0.7 / 0.3), 2000 (train)
/ 1000 (test) boxes per level before NMS 0.7 and 1000 after; 512 RoIs at 25% foreground (IoU
0.5); box head 2 x 1024 fc; mask head 4 convs to 28 x 28; 100 detections, score > 0.05, per-class
NMS 0.5. Losses (torchvision's): binary cross-entropy and smooth L1 (beta 1/9) for the RPN,
softmax cross-entropy and smooth L1 (beta 1/9) for the box head, per-pixel binary
cross-entropy of the ground-truth class's mask for the mask head.
"""

from __future__ import annotations

import keras
import tensorflow as tf

from lambda_keras import _validation as v
from lambda_keras.detection import ops, targets
from lambda_keras.detection.detections import select_detections
from lambda_keras.detection.fpn import FeaturePyramid
from lambda_keras.detection.heads import BoxHead, MaskHead, RPNHead
from lambda_keras.detection.image_size import SIZE_MULTIPLE
from lambda_keras.detection.proposals import generate_proposals
from lambda_keras.preprocessing import normalize

__all__ = ["LOSS_NAMES", "MaskRCNN"]

LOSS_NAMES = ("rpn_objectness", "rpn_box", "classification", "box", "mask")
ROI_LEVELS = ("P2", "P3", "P4", "P5")


def smooth_l1(diff, beta: float):
    diff = tf.abs(diff)
    if beta == 0:
        return diff
    return tf.where(diff < beta, 0.5 * diff * diff / beta, diff - 0.5 * beta)


@keras.saving.register_keras_serializable(package="lambda_keras")
class MaskRCNN(keras.Model):
    """Mask R-CNN with FPN on ``backbone`` (a model whose outputs are ``{"P2": ..., "P5": ...}``,
    e.g. :class:`lambda_keras.zoo.LambdaResNetBackbone`).

    Args:
        backbone: The pyramid backbone.
        num_classes: Object classes (background not counted).
        fpn_channels: Channels of the FPN and the RPN.
        rpn_top_k: ``(pre_nms_train, post_nms_train, pre_nms_test, post_nms_test)``.
        rois_per_image: RoIs sampled per image for the heads (25% foreground at most).
        max_detections: Detections per image.
        score_threshold: Smallest class score a detection may have.
        box_head_units, mask_head_channels: Widths of the heads (1024, 256 in the paper).
    """

    def __init__(
        self,
        backbone: keras.Model,
        num_classes: int,
        *,
        fpn_channels: int = 256,
        rpn_top_k: tuple[int, int, int, int] = (2000, 1000, 1000, 1000),
        rois_per_image: int = 512,
        max_detections: int = 100,
        score_threshold: float = 0.05,
        box_head_units: int = 1024,
        mask_head_channels: int = 256,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if not isinstance(backbone, keras.Model):
            raise TypeError(
                "`backbone` must be a keras.Model with outputs {'P2': ..., 'P5': ...} (e.g. "
                f"lambda_keras.zoo.LambdaResNetBackbone); received {type(backbone).__name__}."
            )
        _check_backbone_outputs(backbone)
        self.backbone = backbone
        self.num_classes = v.positive_int("num_classes", num_classes)
        self.fpn_channels = v.positive_int("fpn_channels", fpn_channels)
        if len(rpn_top_k) != 4:
            raise ValueError(f"`rpn_top_k` must hold 4 positive ints; received {rpn_top_k!r}.")
        self.rpn_top_k = tuple(v.positive_int("rpn_top_k", k) for k in rpn_top_k)
        self.rois_per_image = v.positive_int("rois_per_image", rois_per_image)
        self.max_detections = v.positive_int("max_detections", max_detections)
        self.score_threshold = v.number_in("score_threshold", score_threshold, 0.0, 1.0)
        self.box_head_units = v.positive_int("box_head_units", box_head_units)
        self.mask_head_channels = v.positive_int("mask_head_channels", mask_head_channels)
        self.fpn = FeaturePyramid(fpn_channels, name="fpn")
        self.rpn_head = RPNHead(len(ops.DEFAULT_ASPECT_RATIOS), fpn_channels, name="rpn_head")
        self.box_head = BoxHead(num_classes, box_head_units, name="box_head")
        self.mask_head = MaskHead(num_classes, mask_head_channels, name="mask_head")
        self.loss_trackers = {name: keras.metrics.Mean(name=f"{name}_loss") for name in LOSS_NAMES}
        self.total_tracker = keras.metrics.Mean(name="loss")

    # ------------------------------------------------------------------ building
    def build(self, input_shape):
        """Creates every weight. They do not depend on the image size: a forward pass on one
        zero image of 64 x 64 (the smallest valid size) with ``input_shape``'s channels."""
        channels = input_shape[-1] if input_shape and input_shape[-1] else 3
        side = SIZE_MULTIPLE
        self.call(tf.zeros((1, side, side, channels), self.compute_dtype))
        self.built = True

    def get_build_config(self):
        # Also after `fit` alone (no call recorded an input shape), so that `.keras` files
        # rebuild every weight before loading them.
        return {"input_shape": (None, None, None, 3)}

    def build_from_config(self, config):
        self.build(config["input_shape"])

    def __call__(self, images, *args, **kwargs):
        # Before Keras traces the call (an error raised inside it would print the whole input).
        if hasattr(images, "shape"):
            _check_images(tuple(images.shape))
        return super().__call__(images, *args, **kwargs)

    # ------------------------------------------------------------------ shared
    def _features(self, images, training):
        image_size = _static_image_size(images)
        x = normalize(tf.cast(images, self.compute_dtype))
        features = self.fpn(self.backbone(x, training=training))
        return image_size, features

    def _roi_features(self, features, boxes, size):
        pyramid = {level: features[level] for level in ROI_LEVELS}
        return ops.multilevel_roi_align(pyramid, boxes, size, sampling_ratio=2)

    def _proposals(self, features, image_size, training):
        objectness, deltas = self.rpn_head(features)
        anchors = ops.pyramid_anchors(image_size)
        pre, post = self.rpn_top_k[:2] if training else self.rpn_top_k[2:]
        proposals = generate_proposals(
            objectness, deltas, anchors, image_size, pre_nms_top_k=pre, post_nms_top_k=post
        )
        return objectness, deltas, anchors, proposals

    # ------------------------------------------------------------------ inference
    def call(self, images, training=False):
        image_size, features = self._features(images, training)
        _, _, _, (rois, rois_valid) = self._proposals(features, image_size, training=False)
        logits, deltas = self.box_head(self._roi_features(features, rois, 7))
        detections = select_detections(
            logits,
            deltas,
            rois,
            rois_valid,
            image_size,
            max_detections=self.max_detections,
            score_threshold=self.score_threshold,
        )
        mask_logits = self.mask_head(self._roi_features(features, detections["boxes"], 14))
        masks = _pick_class(mask_logits, tf.maximum(detections["classes"], 0))
        detections["masks"] = tf.sigmoid(tf.cast(masks, tf.float32))
        return detections

    # ------------------------------------------------------------------ training
    def compute_losses(self, images, y, training: bool = True) -> dict[str, tf.Tensor]:
        """The five losses of a batch (each a float32 scalar)."""
        gt_boxes = tf.cast(y["boxes"], tf.float32)
        gt_classes = tf.cast(y["classes"], tf.int32)
        image_size, features = self._features(images, training)
        objectness, deltas, anchors, (proposals, valid) = self._proposals(
            features, image_size, training=True
        )
        all_anchors = tf.concat(list(anchors.values()), 0)
        losses = _rpn_losses(objectness, deltas, all_anchors, gt_boxes, gt_classes)
        sampled = targets.sample_rois(
            proposals, valid, gt_boxes, gt_classes, batch_size_per_image=self.rois_per_image
        )
        logits, box_deltas = self.box_head(self._roi_features(features, sampled.rois, 7))
        losses.update(_box_head_losses(logits, box_deltas, sampled))
        losses["mask"] = self._mask_loss(features, sampled, y, gt_boxes)
        # Every sub-layer is built now: after `fit` alone, `summary`, `count_params` and `save`
        # work as after a call.
        self.built = True
        return losses

    def _mask_loss(self, features, sampled, y, gt_boxes):
        f = sampled.num_foreground
        rois, classes = sampled.rois[:, :f], sampled.classes[:, :f]
        foreground = tf.cast(classes > 0, tf.float32)
        logits = self.mask_head(self._roi_features(features, rois, 14))
        logits = tf.cast(_pick_class(logits, tf.maximum(classes - 1, 0)), tf.float32)
        mask_targets = targets.crop_instance_masks(
            tf.cast(y["masks"], tf.float32),
            gt_boxes,
            rois,
            sampled.matched[:, :f],
            mask_size=int(logits.shape[-1]),
        )
        bce = tf.nn.sigmoid_cross_entropy_with_logits(labels=mask_targets, logits=logits)
        per_roi = tf.reduce_mean(bce, [-2, -1])
        return tf.reduce_sum(per_roi * foreground) / tf.maximum(tf.reduce_sum(foreground), 1.0)

    def train_step(self, data):
        images, y = data[0], data[1]
        with tf.GradientTape() as tape:
            losses = self.compute_losses(images, y, training=True)
            total = tf.add_n(list(losses.values()))
            if self.losses:
                total += tf.add_n([tf.cast(loss, tf.float32) for loss in self.losses])
            scaled = self.optimizer.scale_loss(total)
        grads = tape.gradient(scaled, self.trainable_variables)
        self.optimizer.apply(grads, self.trainable_variables)
        return self._update_trackers(losses, total)

    def test_step(self, data):
        losses = self.compute_losses(data[0], data[1], training=False)
        return self._update_trackers(losses, tf.add_n(list(losses.values())))

    def _update_trackers(self, losses, total):
        for name, value in losses.items():
            self.loss_trackers[name].update_state(value)
        self.total_tracker.update_state(total)
        return {m.name: m.result() for m in self.metrics}

    @property
    def metrics(self):
        return [self.total_tracker, *self.loss_trackers.values()]

    def get_config(self):
        return {
            "name": self.name,
            "backbone": keras.saving.serialize_keras_object(self.backbone),
            "num_classes": self.num_classes,
            "fpn_channels": self.fpn_channels,
            "rpn_top_k": self.rpn_top_k,
            "rois_per_image": self.rois_per_image,
            "max_detections": self.max_detections,
            "score_threshold": self.score_threshold,
            "box_head_units": self.box_head_units,
            "mask_head_channels": self.mask_head_channels,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["backbone"] = keras.saving.deserialize_keras_object(config["backbone"])
        return cls(**config)


def _check_backbone_outputs(backbone: keras.Model) -> None:
    """A functional backbone's outputs must be a dict holding P2-P5 (others are checked by the
    FPN when called)."""
    try:
        outputs = backbone.output
    except (AttributeError, ValueError):  # a subclassed or never-called model
        return
    levels = outputs if isinstance(outputs, dict) else {}
    missing = [level for level in ROI_LEVELS if level not in levels]
    if missing:
        received = sorted(outputs) if isinstance(outputs, dict) else type(outputs).__name__
        raise ValueError(
            "`backbone` must output a dict of feature maps {'P2': stride 4, 'P3': 8, 'P4': 16, "
            f"'P5': 32}} (e.g. lambda_keras.zoo.LambdaResNetBackbone); {backbone.name!r} outputs "
            f"{received}, missing {missing}."
        )


def _check_images(shape: tuple) -> None:
    """Images are ``[batch, height, width, 3]``, height and width multiples of
    :data:`SIZE_MULTIPLE` (64) where known."""
    if len(shape) != 4 or shape[-1] not in (None, 3):
        raise ValueError(
            f"MaskRCNN takes RGB images [batch, height, width, 3]; received images of shape "
            f"{shape}."
        )
    if any(side is not None and side % SIZE_MULTIPLE for side in shape[1:3]):
        raise ValueError(
            f"MaskRCNN needs image heights and widths that are multiples of {SIZE_MULTIPLE} (the "
            f"stride of P6); received images of shape {shape}. Pad the batch "
            "(lambda_keras.detection data pipelines do)."
        )


def _static_image_size(images) -> tuple[int, int]:
    """The traced images' height and width: :func:`_check_images`'s rule, and both known."""
    shape = tuple(images.shape)
    _check_images(shape)
    if shape[1] is None or shape[2] is None:
        raise ValueError(
            "MaskRCNN needs image heights and widths known when the model is traced (the "
            f"anchors are built for them); received images of shape {shape}. Pad the batch "
            "to a fixed size (lambda_keras.detection data pipelines do)."
        )
    return int(shape[1]), int(shape[2])


def _pick_class(mask_logits, classes):
    """``[b, R, m, m, C]`` and ``[b, R]`` class indices -> ``[b, R, m, m]``."""
    one_hot = tf.one_hot(classes, mask_logits.shape[-1], dtype=mask_logits.dtype)
    return tf.reduce_sum(mask_logits * one_hot[:, :, None, None, :], -1)


def _rpn_losses(objectness, deltas, anchors, gt_boxes, gt_classes):
    labels, weights, target_deltas = targets.rpn_targets(anchors, gt_boxes, gt_classes)
    objectness = tf.cast(objectness, tf.float32)
    count = tf.maximum(tf.reduce_sum(weights), 1.0)
    bce = tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=objectness)
    box = tf.reduce_sum(smooth_l1(tf.cast(deltas, tf.float32) - target_deltas, 1 / 9), -1)
    return {
        "rpn_objectness": tf.reduce_sum(bce * weights) / count,
        "rpn_box": tf.reduce_sum(box * labels) / count,
    }


def _box_head_losses(logits, deltas, sampled: targets.RoiTargets):
    valid = tf.cast(sampled.valid, tf.float32)
    count = tf.maximum(tf.reduce_sum(valid), 1.0)
    ce = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=sampled.classes, logits=tf.cast(logits, tf.float32)
    )
    foreground = tf.cast(sampled.classes > 0, tf.float32)
    chosen = tf.gather(
        tf.cast(deltas, tf.float32), tf.maximum(sampled.classes - 1, 0), batch_dims=2
    )
    box = tf.reduce_sum(smooth_l1(chosen - sampled.deltas, 1 / 9), -1)
    return {
        "classification": tf.reduce_sum(ce * valid) / count,
        "box": tf.reduce_sum(box * foreground) / count,
    }
