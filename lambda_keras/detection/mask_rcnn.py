"""Mask R-CNN (He et al., 2017) with FPN on a pyramid backbone, as a ``keras.Model``.

``fit`` trains it on ``(images, targets)`` batches, ``predict``/``call`` detects. Every shape is
static once the image size is (ground truth padded to a fixed number of instances, fixed-size
proposal, RoI and detection sets, padded NMS), so the training step compiles with XLA, and on
PyTorch into one graph per step
([`CompiledSteps`][lambda_keras.backend.compiled_steps.CompiledSteps]: by default on a GPU).
Where shapes may vary, the heads skip the padding of those sets, as torchvision's do, with the
same losses and detections: on eager PyTorch in training and inference, and in Keras' TensorFlow
training step when no XLA compiles it (the box head on the sampled RoIs that are real, the mask
head on the foreground RoIs or the detections).

* Images: ``[batch, height, width, 3]`` RGB in ``[0, 255]`` (normalised inside with the
  ImageNet mean and standard deviation), height and width multiples of 64 and known when the
  model is traced (the anchors are built for them).
* Targets: ``{"boxes": [b, G, 4], "classes": [b, G] int32, "masks": [b, G, M, M]}``, see
  [`lambda_keras.detection.targets`][lambda_keras.detection.targets] (``-1`` classes pad; masks in
  their boxes' frames), optionally ``"mask_boxes": [b, G, 4]``, the frames of the masks when they
  differ from the boxes (a box clipped by a crop;
  [`lambda_keras.training.detection.datasets.coco.make_dataset`][lambda_keras.training.detection.datasets.coco.make_dataset]
  gives them).
* Outputs: ``{"boxes": [b, D, 4], "scores": [b, D], "classes": [b, D] (-1 padding), "masks": [b, D,
  28, 28] probabilities inside each box, "valid": [b, D]}`` in the input image's pixels;
  [`lambda_keras.detection.ops.paste_masks`][lambda_keras.detection.ops.paste_masks] puts masks into
  the image.

* Or ``{"images": [b, H, W, 3], "image_sizes": [b, 2]}``: each image's ``(height, width)`` at
  the top left of the batch; boxes are clipped to it (and, with a ``transform`` that pads each
  image to a multiple, every map is zeroed beyond that padded part: each image then gives what
  it gives alone, whatever the batch).

The defaults are the standard Mask R-CNN's (Detectron2 / torchvision): anchors 32-512 on P2-P6
with ratios 0.5, 1, 2; RPN 256 anchors per image at 50% positives (IoU 0.7 / 0.3), 2000 (train)
/ 1000 (test) boxes per level before NMS 0.7 and 1000 after; 512 RoIs at 25% foreground (IoU
0.5); box head 2 x 1024 fc; mask head 4 convs to 28 x 28; 100 detections, score > 0.05, per-class
NMS 0.5. Losses (torchvision's): binary cross-entropy and smooth L1 (beta 1/9) for the RPN,
softmax cross-entropy and smooth L1 (beta 1/9) for the box head, per-pixel binary
cross-entropy of the ground-truth class's mask for the mask head.

Variants are settings, not subclasses: torchvision's Mask R-CNN
([maskrcnn_resnet50_fpn][lambda_keras.detection.maskrcnn_resnet50_fpn]) is this model with its
backbone, its anchors (``anchor_generator=TorchvisionAnchors()``), ROIAlign without the
half-pixel shift (``roi_align_aligned=False``), its proposal counts and minimum sizes, and its
input transform
([TorchvisionTransform][lambda_keras.detection.transform.TorchvisionTransform]); its v2
([maskrcnn_resnet50_fpn_v2][lambda_keras.detection.maskrcnn_resnet50_fpn_v2]) adds batch norm in
the FPN and the heads, a second RPN convolution and a box head of four convolutions and one fully
connected layer.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Iterable, Mapping

import keras
import numpy as np
from keras import ops as K
from keras.src.backend import compute_output_spec  # Keras' symbolic trace (JAX: jax.eval_shape)

from lambda_keras import _validation as v
from lambda_keras.backend import stateless_steps
from lambda_keras.backend.compiled_steps import CompiledSteps
from lambda_keras.backend.host_initializers import initial_values_on_host
from lambda_keras.detection import ops, target_checks, targets
from lambda_keras.detection.anchor_generator import AnchorGenerator, CentredAnchors
from lambda_keras.detection.detections import select_detections
from lambda_keras.detection.fpn import FeaturePyramid
from lambda_keras.detection.heads import BoxHead, MaskHead, RPNHead
from lambda_keras.detection.image_size import SIZE_MULTIPLE, check_image_size
from lambda_keras.detection.ops._checks import Tensor
from lambda_keras.detection.ops.sizes import ceil_divide
from lambda_keras.detection.proposals import generate_proposals
from lambda_keras.detection.transform import InputTransform, LetterboxTransform
from lambda_keras.detection.valid_region import zero_outside
from lambda_keras.labels_file import is_category_id
from lambda_keras.preprocessing import normalize

__all__ = ["LOSS_NAMES", "MaskRCNN"]

LOSS_NAMES = ("rpn_objectness", "rpn_box", "classification", "box", "mask")
ROI_LEVELS = ("P2", "P3", "P4", "P5")


@dataclasses.dataclass(frozen=True)
class _View:
    """Where the images lie in a batch: the canvas ``(h, w)``, each image's size ``[b, 2]``
    (None: every image fills the canvas) and, with a transform that pads each image to a
    multiple, that padded size ``[b, 2]`` (None: nothing is zeroed)."""

    canvas: tuple[int, int]
    image_sizes: Tensor | None
    padded: Tensor | None

    @property
    def clip_to(self):
        return self.canvas if self.image_sizes is None else self.image_sizes


def smooth_l1(diff, beta: float):
    diff = K.abs(diff)
    if beta == 0:
        return diff
    return K.where(diff < beta, 0.5 * diff * diff / beta, diff - 0.5 * beta)


@keras.saving.register_keras_serializable(package="lambda_keras")
class MaskRCNN(CompiledSteps, keras.Model):
    """Mask R-CNN with FPN on ``backbone`` (a model whose outputs are ``{"P2": ..., "P5": ...}``,
    e.g. [`lambda_keras.zoo.LambdaResNetBackbone`][lambda_keras.zoo.LambdaResNetBackbone]).

    Args:
        backbone: The pyramid backbone.
        num_classes: Object classes (background not counted).
        fpn_channels: Channels of the FPN and the RPN.
        rpn_top_k: ``(pre_nms_train, post_nms_train, pre_nms_test, post_nms_test)``.
        rois_per_image: RoIs sampled per image for the heads (25% foreground at most).
        max_detections: Detections per image.
        score_threshold: Smallest class score a detection may have.
        box_head_units: Width of the box head's fully connected layers (1024 in the paper).
        mask_head_channels: Width of the mask head (256 in the paper).
        fpn_batch_norm: Batch norm after each FPN convolution (which then has no bias).
        rpn_convs: 3x3 convolutions of the RPN head (1; torchvision's v2 model: 2).
        box_head_convs: 3x3 convolutions (``mask_head_channels`` wide) of the box head (0;
            torchvision's v2: 4).
        box_head_fcs: Fully connected layers of the box head (2; torchvision's v2: 1).
        head_batch_norm: Batch norm after each convolution of the box and mask heads.
        anchor_generator: Where the anchors lie: default
            [`CentredAnchors()`][lambda_keras.detection.anchor_generator.CentredAnchors] (32-512
            pixels on P2-P6, ratios 0.5, 1, 2, centred on their cells);
            [`TorchvisionAnchors()`][lambda_keras.detection.anchor_generator.TorchvisionAnchors]
            for torchvision's rule. It must cover P2-P6, the FPN's levels.
        roi_align_aligned: ROIAlign's half-pixel shift (True; torchvision's v1 model: False).
        proposal_min_size: Proposals with a side below this many pixels are dropped.
        detection_min_size: Detections with a side of at most this many pixels are dropped.
        detection_candidates: (box, class) pairs kept before the final per-class NMS (a fixed
            number keeps shapes static; torchvision keeps every pair above the threshold).
        transform: The input transform the model serves with: default
            [`LetterboxTransform()`][lambda_keras.detection.transform.LetterboxTransform] (the
            project's letterbox, at a size chosen when serving unless it carries one), or
            [`TorchvisionTransform()`][lambda_keras.detection.transform.TorchvisionTransform]
            (with a backbone that takes ``valid_sizes``).
        categories: ``[{"id": int, "name": str}]`` per class (e.g. COCO's), or None.

    Examples:
        >>> from lambda_keras import zoo
        >>> from lambda_keras.detection import MaskRCNN
        >>> backbone = zoo.LambdaResNetBackbone(50, width_multiplier=0.25)
        >>> # the standard Mask R-CNN's settings
        >>> detector = MaskRCNN(backbone, num_classes=3)
        >>> detector.rpn_top_k, detector.rois_per_image, detector.max_detections
        ((2000, 1000, 1000, 1000), 512, 100)

        ``fit`` trains it on ``(images, targets)`` ([targets][lambda_keras.detection.targets]);
        [detect][lambda_keras.detection.detect.detect] runs it on a photo of any size.
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
        fpn_batch_norm: bool = False,
        rpn_convs: int = 1,
        box_head_convs: int = 0,
        box_head_fcs: int = 2,
        head_batch_norm: bool = False,
        anchor_generator: AnchorGenerator | None = None,
        roi_align_aligned: bool = True,
        proposal_min_size: float = 0.0,
        detection_min_size: float = 0.0,
        detection_candidates: int = 1000,
        transform: InputTransform | None = None,
        categories: list[dict] | None = None,
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
        self.rpn_top_k = _check_rpn_top_k(rpn_top_k)
        self.rois_per_image = v.positive_int("rois_per_image", rois_per_image)
        self.max_detections = v.positive_int("max_detections", max_detections)
        self.score_threshold = v.number_in("score_threshold", score_threshold, 0.0, 1.0)
        self.box_head_units = v.positive_int("box_head_units", box_head_units)
        self.mask_head_channels = v.positive_int("mask_head_channels", mask_head_channels)
        self.anchor_generator = _check_anchor_generator(anchor_generator)
        self.roi_align_aligned = v.boolean("roi_align_aligned", roi_align_aligned)
        self.proposal_min_size = v.number_in(
            "proposal_min_size", proposal_min_size, 0.0, float("inf")
        )
        self.detection_min_size = v.number_in(
            "detection_min_size", detection_min_size, 0.0, float("inf")
        )
        self.detection_candidates = v.positive_int("detection_candidates", detection_candidates)
        self.transform = _check_transform(transform, backbone)
        self.categories = check_categories(categories, self.num_classes)
        _check_part_options(
            fpn_batch_norm, rpn_convs, box_head_convs, box_head_fcs, head_batch_norm
        )
        self.fpn = FeaturePyramid(fpn_channels, batch_norm=fpn_batch_norm, name="fpn")
        self.rpn_head = RPNHead(
            self.anchor_generator.anchors_per_cell, fpn_channels, rpn_convs, name="rpn_head"
        )
        self.box_head = BoxHead(
            num_classes,
            box_head_units,
            num_convs=box_head_convs,
            conv_channels=mask_head_channels,
            num_fcs=box_head_fcs,
            batch_norm=head_batch_norm,
            name="box_head",
        )
        self.mask_head = MaskHead(
            num_classes, mask_head_channels, batch_norm=head_batch_norm, name="mask_head"
        )
        # Each loss's mean over the epoch, beside Keras' own "loss" (their sum).
        self.loss_trackers = {name: keras.metrics.Mean(name=f"{name}_loss") for name in LOSS_NAMES}
        # Target rows a compiled step left out of the loss (lambda_keras.detection.target_checks:
        # a class out of range, a non-finite or inverted box, a bad mask), summed over the epoch.
        self.dropped_targets = keras.metrics.Sum(name="dropped_targets")
        # The random sampling of anchors and RoIs (a variable: stateless steps on JAX).
        self.sampling_seed = keras.random.SeedGenerator(name="sampling_seed")

    # ------------------------------------------------------------------ building
    def build(self, input_shape):
        """Creates every weight. They do not depend on the image size: a forward pass on one
        zero image of 64 x 64 (the smallest valid size) with ``input_shape``'s channels."""
        if isinstance(input_shape, dict):
            input_shape = input_shape["images"]
        channels = input_shape[-1] if input_shape and input_shape[-1] else 3
        shape = (1, SIZE_MULTIPLE, SIZE_MULTIPLE, channels)
        with initial_values_on_host():  # on JAX: no compile per initial value's shape
            if keras.backend.backend() == "jax":
                # Traced, not run: JAX compiles each eager op for its shapes (800 compiles,
                # most of the build's time); Keras creates the variables the trace meets.
                compute_output_spec(self.call, keras.KerasTensor(shape, self.compute_dtype))
            else:
                self.call(K.zeros(shape, self.compute_dtype))
        self.built = True

    def get_build_config(self):
        # Also after `fit` alone (no call recorded an input shape), so that `.keras` files
        # rebuild every weight before loading them.
        return {"input_shape": (None, None, None, 3)}

    def build_from_config(self, config):
        self.build(config["input_shape"])

    @property
    def _default_save_signature(self):
        # Keras (TensorFlow backend) traces a default SavedModel signature on the build shape,
        # [None, None, None, 3]: a MaskRCNN needs static image sizes (its anchors), so it has
        # none; lambda_keras.detection.serving exports its serving functions instead.
        return None

    def __call__(self, inputs, *args, **kwargs):
        # Before Keras traces the call (an error raised inside it would print the whole input).
        if isinstance(inputs, dict):
            inputs = _check_inputs(inputs)
        elif hasattr(inputs, "shape"):
            _check_images(tuple(inputs.shape))
            _check_image_values(inputs)
        return super().__call__(inputs, *args, **kwargs)

    def input_transform(self, image_size: int | None = None):
        """How a photo becomes this model's input and its outputs go back into the photo
        ([`lambda_keras.detection.transform`][lambda_keras.detection.transform]): the model's own
        ``transform``, or the letterbox at ``image_size`` (a multiple of 64) when one is given
        ([`InputTransform.at_size`][lambda_keras.detection.transform.InputTransform.at_size])."""
        if image_size is not None:
            check_image_size(image_size)
        return self.transform.at_size(image_size)

    # ------------------------------------------------------------------ shared
    def _view(self, images, image_sizes) -> _View:
        canvas = _static_image_size(images)
        if image_sizes is None:
            return _View(canvas, None, None)
        image_sizes = K.minimum(K.cast(image_sizes, "int32"), K.convert_to_tensor(canvas, "int32"))
        multiple = self.transform.size_divisible
        padded = None if multiple is None else ceil_divide(image_sizes, multiple) * multiple
        return _View(canvas, image_sizes, padded)

    def pyramid_features(self, inputs, training: bool = False) -> dict:
        """The FPN's maps ``{"P2": [b, h / 4, w / 4, c], ..., "P6": ...}`` for ``inputs``
        (images, or ``{"images", "image_sizes"}``)."""
        images, image_sizes = _split(inputs)
        return self._features(images, self._view(images, image_sizes), training)

    def _features(self, images, view: _View, training):
        return self._pyramid(self._backbone_maps(images, view, training), view)

    def _pyramid(self, maps: dict, view: _View) -> dict:
        """The FPN's maps from the backbone's ``maps``."""
        if not _takes_valid_sizes(self.backbone):
            return self.fpn(maps)
        return self.fpn(maps, valid_sizes=view.padded)

    def _backbone_maps(self, images, view: _View, training):
        """The backbone's maps ``{"P2": ..., "P5": ...}`` of the normalized ``images``."""
        x = normalize(K.cast(images, self.compute_dtype))
        if not _takes_valid_sizes(self.backbone):
            return self.backbone(x, training=training)
        padded = view.padded
        if padded is None:  # every image fills the batch
            padded = K.tile(K.convert_to_tensor([view.canvas], "int32"), (K.shape(images)[0], 1))
        else:
            x = zero_outside(x, view.image_sizes, 1)
        return self.backbone({"images": x, "valid_sizes": padded}, training=training)

    def _roi_features(self, features, boxes, size, view: _View):
        pyramid = {level: features[level] for level in ROI_LEVELS}
        return ops.multilevel_roi_align(
            pyramid,
            boxes,
            size,
            sampling_ratio=2,
            aligned=self.roi_align_aligned,
            valid_sizes=view.padded,
        )

    def _anchors(self, view: _View):
        """``(anchors, valid)``: ``{"P<l>": [n_l, 4]}`` for every image alike, or per image
        ``{"P<l>": [b, n_l, 4]}`` with their validity (torchvision's rule on images of their
        own sizes)."""
        sizes = view.image_sizes if view.padded is None else view.padded
        return self.anchor_generator(view.canvas, sizes)

    def _proposals(self, objectness, deltas, view: _View, training):
        anchors, valid = self._anchors(view)
        pre, post = self.rpn_top_k[:2] if training else self.rpn_top_k[2:]
        proposals = generate_proposals(
            objectness,
            deltas,
            anchors,
            view.clip_to,
            pre_nms_top_k=pre,
            post_nms_top_k=post,
            min_size=self.proposal_min_size,
            anchors_valid=valid,
        )
        return anchors, proposals

    # ------------------------------------------------------------------ inference
    def call(self, inputs, training=False):
        """Detections (``training=False``): ``{"boxes": [b, D, 4], "scores": [b, D], "classes": [b,
        D], "valid": [b, D], "masks": [b, D, 28, 28]}``. With ``training=True``, the first stage
        that [`compute_loss`][lambda_keras.detection.mask_rcnn.MaskRCNN.compute_loss] continues
        from:
        ``{"features": the FPN's maps, "objectness": [b, n], "rpn_deltas": [b, n, 4]}``."""
        images, image_sizes = _split(inputs)
        view = self._view(images, image_sizes)
        first = self._first_stage(images, view, training)
        if training:
            return first
        features = first["features"]
        _, proposals = self._proposals(
            first["objectness"], first["rpn_deltas"], view, training=False
        )
        detections = self._box_detections(features, proposals, view)
        detections["masks"] = self._detection_masks(features, view, detections)
        return detections

    def _box_detections(self, features, proposals, view: _View) -> dict:
        """The box head on the ``(rois, valid)`` proposals and the detections it selects
        (``boxes``, ``scores``, ``classes``, ``valid``; no masks yet)."""
        rois, rois_valid = proposals
        if _varying_shapes(rois_valid):  # eager PyTorch: the box head on the kept proposals
            count = _most_per_image(rois_valid)
            rois, rois_valid = rois[:, :count], rois_valid[:, :count]
        logits, deltas = self.box_head(self._roi_features(features, rois, 7, view))
        return select_detections(
            logits,
            deltas,
            rois,
            rois_valid,
            view.clip_to,
            max_detections=self.max_detections,
            score_threshold=self.score_threshold,
            candidates=self.detection_candidates,
            min_size=self.detection_min_size,
        )

    def _detection_masks(self, features, view: _View, detections: dict) -> Tensor:
        """``[b, D, 28, 28]`` mask probabilities of the detections, zeros for the padding. On
        eager PyTorch the mask head runs on the detections the image with the most has (they come
        first), as torchvision's does."""
        boxes, classes, valid = detections["boxes"], detections["classes"], detections["valid"]
        slots = int(boxes.shape[1])
        count = _most_per_image(valid) if _varying_shapes(valid) else slots
        mask_logits = self.mask_head(self._roi_features(features, boxes[:, :count], 14, view))
        masks = _pick_class(mask_logits, K.maximum(classes[:, :count], 0))
        masks = K.sigmoid(K.cast(masks, "float32"))
        if count < slots:
            masks = K.pad(masks, [[0, 0], [0, slots - count], [0, 0], [0, 0]])
        return K.where(valid[:, :, None, None], masks, 0.0)

    def _first_stage(self, images, view: _View, training) -> dict:
        features = self._features(images, view, training)
        objectness, deltas = self.rpn_head(features, valid_sizes=view.padded)
        return {"features": features, "objectness": objectness, "rpn_deltas": deltas}

    # ------------------------------------------------------------------ training
    def fit(self, *args, **kwargs):
        """Keras' ``fit``. Targets given as arrays or tensors (``y``, ``validation_data``) are
        checked first ([check_targets][lambda_keras.detection.target_checks.check_targets]): a
        bad value is a ``ValueError`` naming its target, image and instance before the first
        step. Targets from a dataset or generator are checked inside the step: a bad row is
        left out of the loss and counted in the ``dropped_targets`` metric."""
        bound = inspect.signature(keras.Model.fit).bind(self, *args, **kwargs).arguments
        self._check_given_targets(bound.get("y"))
        validation = bound.get("validation_data")
        if isinstance(validation, (tuple, list)) and len(validation) >= 2:
            self._check_given_targets(validation[1])
        return super().fit(*args, **kwargs)

    def evaluate(self, *args, **kwargs):
        """Keras' ``evaluate``, targets checked as in ``fit``."""
        bound = inspect.signature(keras.Model.evaluate).bind(self, *args, **kwargs).arguments
        self._check_given_targets(bound.get("y"))
        return super().evaluate(*args, **kwargs)

    def train_on_batch(self, x, y=None, *args, **kwargs):
        """Keras' ``train_on_batch``, targets checked as in ``fit``."""
        self._check_given_targets(y)
        return super().train_on_batch(x, y, *args, **kwargs)

    def test_on_batch(self, x, y=None, *args, **kwargs):
        """Keras' ``test_on_batch``, targets checked as in ``fit``."""
        self._check_given_targets(y)
        return super().test_on_batch(x, y, *args, **kwargs)

    def _check_given_targets(self, y) -> None:
        if y is not None:  # None: the data is a dataset or generator, checked in the step
            target_checks.check_targets(y, self.num_classes)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """The training loss of a batch, Keras' hook on every backend (``fit`` and ``evaluate``):
        the sum of the five losses of
        [`compute_losses`][lambda_keras.detection.mask_rcnn.MaskRCNN.compute_losses] (each also goes
        to its ``<name>_loss`` metric) and of any loss the layers added.

        Args:
            x: ``[b, H, W, 3]`` images.
            y: ``{"boxes": [b, G, 4], "classes": [b, G], "masks": [b, G, M, M]}``
                ([targets][lambda_keras.detection.targets]); rows that break the rule of
                [target_checks][lambda_keras.detection.target_checks] are left out of the loss
                and counted in the ``dropped_targets`` metric.
            y_pred: This model's output on ``x``: the first stage (``training=True``), or
                detections (in ``evaluate``; the first stage is then run again).
        """
        y, dropped = self._usable_targets(y)
        self.dropped_targets.update_state(dropped)
        if not (isinstance(y_pred, dict) and "objectness" in y_pred):
            y_pred = self._first_stage(x, self._view(x, None), training=False)
        losses = self._all_losses(x, y, y_pred, self._step_without_xla())
        for name, value in losses.items():
            self.loss_trackers[name].update_state(value)
        total = sum(losses.values())
        for loss in self.losses:  # weight regularizers, add_loss
            total = total + K.cast(loss, "float32")
        return total

    def compute_losses(self, images, y, training: bool = True) -> dict[str, Tensor]:
        """The five losses of a batch (each a float32 scalar), from the images on: what
        ``compute_loss`` sums (bad target rows left out as there)."""
        y, _ = self._usable_targets(y)
        first = self._first_stage(images, self._view(images, None), training)
        return self._all_losses(images, y, first)

    def _usable_targets(self, y) -> tuple[dict, Tensor]:
        """``y`` checked for shape (a ``ValueError`` when traced), its bad rows made padding,
        and how many there were ([usable][lambda_keras.detection.target_checks.usable])."""
        target_checks.check_target_shapes(y)
        return target_checks.usable(y, self.num_classes)

    def _step_without_xla(self) -> bool:
        """Whether Keras' TensorFlow step of this model is a graph no XLA compiles (not
        ``jit_compile``, not on TPUs): there the heads may train on the RoIs that count alone
        (``_trimmed``). ``compute_losses`` keeps static shapes on TensorFlow: a caller's own
        ``tf.function`` may be XLA's."""
        if keras.backend.backend() != "tensorflow" or self.jit_compile:
            return False
        import tensorflow as tf

        return not isinstance(tf.distribute.get_strategy(), tf.distribute.TPUStrategy)

    def _all_losses(
        self, images, y, first: dict, tensorflow_graph: bool = False
    ) -> dict[str, Tensor]:
        """The five losses; ``tensorflow_graph``: a TensorFlow graph without XLA
        (``_step_without_xla``), whose shapes may vary."""
        gt_boxes = K.cast(y["boxes"], "float32")
        gt_classes = K.cast(y["classes"], "int32")
        view = self._view(images, None)
        features = first["features"]
        anchors, (proposals, valid) = self._proposals(
            first["objectness"], first["rpn_deltas"], view, training=True
        )
        all_anchors = K.concatenate(list(anchors.values()), 0)
        losses = _rpn_losses(
            first["objectness"],
            first["rpn_deltas"],
            all_anchors,
            gt_boxes,
            gt_classes,
            self.sampling_seed,
        )
        sampled = targets.sample_rois(
            proposals,
            valid,
            gt_boxes,
            gt_classes,
            batch_size_per_image=self.rois_per_image,
            seed=self.sampling_seed,
        )
        sampled = _trimmed(sampled, tensorflow_graph)
        logits, box_deltas = self.box_head(self._roi_features(features, sampled.rois, 7, view))
        losses.update(_box_head_losses(logits, box_deltas, sampled))
        losses["mask"] = self._mask_loss(features, view, sampled, y, gt_boxes, tensorflow_graph)
        # Every sub-layer is built now: after `fit` alone, `summary`, `count_params` and `save`
        # work as after a call.
        self.built = True
        return losses

    def _mask_loss(self, features, view, sampled, y, gt_boxes, tensorflow_graph: bool = False):
        f = _mask_roi_count(sampled, tensorflow_graph)
        rois, classes = sampled.rois[:, :f], sampled.classes[:, :f]
        foreground = K.cast(classes > 0, "float32")
        logits = self.mask_head(self._roi_features(features, rois, 14, view))
        logits = K.cast(_pick_class(logits, K.maximum(classes - 1, 0)), "float32")
        mask_targets = targets.crop_instance_masks(
            K.cast(y["masks"], "float32"),
            K.cast(y["mask_boxes"], "float32") if "mask_boxes" in y else gt_boxes,
            rois,
            sampled.matched[:, :f],
            mask_size=int(logits.shape[-1]),
        )
        bce = K.binary_crossentropy(mask_targets, logits, from_logits=True)
        per_roi = K.mean(bce, axis=(-2, -1))
        return K.sum(per_roi * foreground) / K.maximum(K.sum(foreground), 1.0)

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
            "fpn_batch_norm": self.fpn.batch_norm,
            "rpn_convs": self.rpn_head.num_convs,
            "box_head_convs": self.box_head.num_convs,
            "box_head_fcs": self.box_head.num_fcs,
            "head_batch_norm": self.box_head.batch_norm,
            "anchor_generator": keras.saving.serialize_keras_object(self.anchor_generator),
            "roi_align_aligned": self.roi_align_aligned,
            "proposal_min_size": self.proposal_min_size,
            "detection_min_size": self.detection_min_size,
            "detection_candidates": self.detection_candidates,
            "transform": keras.saving.serialize_keras_object(self.transform),
            "categories": self.categories,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["backbone"] = keras.saving.deserialize_keras_object(config["backbone"])
        for part in ("anchor_generator", "transform"):
            config[part] = keras.saving.deserialize_keras_object(config.get(part))
        return cls(**config)


def _check_backbone_outputs(backbone: keras.Model) -> None:
    """A functional backbone's outputs must be a dict holding P2-P5 (others are checked by the
    FPN when called)."""
    if isinstance(backbone, keras.Sequential):  # one tensor out of each layer, never a dict
        outputs = None
    else:
        try:
            outputs = backbone.output
        except (AttributeError, ValueError):  # a subclassed or never-called model
            return
    levels = outputs if isinstance(outputs, dict) else {}
    missing = [level for level in ROI_LEVELS if level not in levels]
    if missing:
        if isinstance(outputs, dict):
            received = sorted(outputs)
        elif isinstance(outputs, (list, tuple)):
            received = f"a {type(outputs).__name__} of {len(outputs)} tensors"
        else:
            received = "one tensor"
        raise ValueError(
            "`backbone` must output a dict of feature maps {'P2': stride 4, 'P3': 8, 'P4': 16, "
            f"'P5': 32}} (e.g. lambda_keras.zoo.LambdaResNetBackbone); {backbone.name!r} outputs "
            f"{received}, missing {missing}."
        )


def _check_rpn_top_k(rpn_top_k) -> tuple[int, int, int, int]:
    """``rpn_top_k`` as a tuple of 4 positive ints, one per pyramid level."""
    if not isinstance(rpn_top_k, (list, tuple)) or len(rpn_top_k) != 4:
        raise ValueError(f"`rpn_top_k` must hold 4 positive ints; received {rpn_top_k!r}.")
    return tuple(v.positive_int("rpn_top_k", k) for k in rpn_top_k)


def _check_part_options(
    fpn_batch_norm, rpn_convs, box_head_convs, box_head_fcs, head_batch_norm
) -> None:
    """The FPN's and the heads' options under MaskRCNN's names (the parts' own checks would
    name their parameters: num_convs, num_fcs, batch_norm)."""
    v.boolean("fpn_batch_norm", fpn_batch_norm)
    v.positive_int("rpn_convs", rpn_convs)
    v.non_negative_int("box_head_convs", box_head_convs)
    v.positive_int("box_head_fcs", box_head_fcs)
    v.boolean("head_batch_norm", head_batch_norm)


def _takes_valid_sizes(backbone: keras.Model) -> bool:
    """Whether the backbone takes ``{"images", "valid_sizes"}`` (and zeroes its maps beyond each
    image's valid part, as
    [`lambda_keras.detection.torchvision.resnet`][lambda_keras.detection.torchvision.resnet]
    does)."""
    try:
        inputs = backbone.input
    except (AttributeError, ValueError):  # a subclassed or never-called model: images alone
        return False
    return isinstance(inputs, dict) and set(inputs) == {"images", "valid_sizes"}


def _check_anchor_generator(anchor_generator) -> AnchorGenerator:
    if anchor_generator is None:
        return CentredAnchors()
    if not isinstance(anchor_generator, AnchorGenerator):
        raise TypeError(
            "`anchor_generator` must be an AnchorGenerator (CentredAnchors(), "
            f"TorchvisionAnchors()); received {type(anchor_generator).__name__}."
        )
    levels = tuple(f"P{level}" for level in range(2, 7))
    if anchor_generator.levels != levels:
        raise ValueError(
            f"`anchor_generator` must give anchors on the FPN's levels {levels}; received "
            f"{anchor_generator.levels}."
        )
    return anchor_generator


def _check_transform(transform, backbone: keras.Model) -> InputTransform:
    if transform is None:
        return LetterboxTransform()
    if not isinstance(transform, InputTransform):
        raise TypeError(
            "`transform` must be an InputTransform (LetterboxTransform(), "
            f"TorchvisionTransform()); received {type(transform).__name__}."
        )
    if transform.size_divisible is not None and not _takes_valid_sizes(backbone):
        raise ValueError(
            f"A transform that pads each image to a multiple of {transform.size_divisible} "
            "needs a backbone that takes {'images': ..., 'valid_sizes': ...} and zeroes its "
            f"maps beyond each image (torchvision's ResNet-50); {backbone.name!r} does not."
        )
    return transform


def check_categories(
    categories, num_classes: int, name: str = "categories"
) -> list[dict] | None:
    """``categories``, one ``{"id": int >= 0, "name": str}`` per class (None: none), as a list
    of dicts with Python int ids; else an error that names ``name`` and the entry. A bool is not
    an id (Python counts True as 1: it was written to ``labels.json`` as category 1)."""
    if categories is None:
        return None
    allowed = f"a list of one {{'id': int >= 0, 'name': str}} per class ({num_classes})"
    if isinstance(categories, (str, bytes, Mapping)) or not isinstance(categories, Iterable):
        raise TypeError(f"`{name}` must be {allowed}; received {categories!r}.")
    categories = list(categories)
    if len(categories) != num_classes:
        raise ValueError(f"`{name}` must be {allowed}; received {len(categories)} entries.")
    for index, category in enumerate(categories):
        if not (
            isinstance(category, Mapping)
            and is_category_id(category.get("id"))
            and isinstance(category.get("name"), str)
        ):
            raise ValueError(f"`{name}` must be {allowed}; received {name}[{index}]={category!r}.")
    ids = [int(category["id"]) for category in categories]
    if len(set(ids)) != len(ids):
        raise ValueError(f"`{name}` must give each class its own id; received the ids {ids}.")
    return [{**category, "id": i} for category, i in zip(categories, ids, strict=True)]


def _split(inputs):
    """``(images, image_sizes or None)`` of the model's input."""
    if isinstance(inputs, dict):
        return inputs["images"], inputs["image_sizes"]
    return inputs, None


def _check_inputs(inputs: dict) -> dict:
    """``{"images": [b, H, W, 3], "image_sizes": [b, 2]}``, the sizes as int32."""
    if set(inputs) != {"images", "image_sizes"}:
        raise ValueError(
            "MaskRCNN takes images [batch, height, width, 3] or {'images': ..., "
            f"'image_sizes': [batch, 2]}}; received a dict with keys {sorted(inputs)}."
        )
    images = inputs["images"]
    _check_images(tuple(images.shape))
    _check_image_values(images)
    sizes = K.convert_to_tensor(inputs["image_sizes"])
    dtype = keras.backend.standardize_dtype(sizes.dtype)
    if len(sizes.shape) != 2 or sizes.shape[-1] != 2 or "int" not in dtype:
        raise ValueError(
            "`image_sizes` must be integers [batch, 2], each image's (height, width) inside "
            f"the batch; received {dtype} of shape {tuple(sizes.shape)}."
        )
    batches = (images.shape[0], sizes.shape[0])
    if all(isinstance(b, int) for b in batches) and batches[0] != batches[1]:
        raise ValueError(
            f"`image_sizes` needs one (height, width) row per image: {batches[0]} images; "
            f"received {batches[1]} rows."
        )
    _check_size_values(inputs["image_sizes"])
    return {"images": images, "image_sizes": K.cast(sizes, "int32")}


def _check_size_values(image_sizes) -> None:
    """Sizes given as host data (a list, a NumPy array) hold heights and widths of at least 1
    (a size of 0 or less left the image no pixels: no detections, no error)."""
    if not isinstance(image_sizes, (list, tuple, np.ndarray)):
        return  # a tensor: its values are the data pipeline's
    values = np.asarray(image_sizes)
    if values.size and values.min() < 1:
        raise ValueError(
            "`image_sizes` must hold heights and widths of at least 1 pixel; received "
            f"{values.tolist()}."
        )


def _check_image_values(images) -> None:
    """Images given as host data (a NumPy array) hold finite values: one NaN pixel spreads
    through the backbone and the detections of its image come out empty, with no error."""
    floats = isinstance(images, np.ndarray) and images.dtype.kind == "f"
    bad = v.non_finite(images) if floats else None
    if bad is not None:
        where, count = bad
        raise ValueError(
            f"`images` must hold finite values; received images of shape {images.shape} with "
            f"{count} NaN or infinite values, the first at {where}."
        )


def _check_images(shape: tuple) -> None:
    """Images are ``[batch, height, width, 3]``, at least one of them, height and width positive
    multiples of [`SIZE_MULTIPLE`][lambda_keras.detection.mask_rcnn.SIZE_MULTIPLE] (64) where
    known."""
    if len(shape) != 4 or shape[-1] not in (None, 3):
        raise ValueError(
            f"MaskRCNN takes RGB images [batch, height, width, 3]; received images of shape "
            f"{shape}."
        )
    if shape[0] == 0:
        raise ValueError(
            "MaskRCNN needs at least one image in the batch; received images of shape "
            f"{shape}."
        )
    if any(side is not None and (side < 1 or side % SIZE_MULTIPLE) for side in shape[1:3]):
        raise ValueError(
            "MaskRCNN needs image heights and widths that are positive multiples of "
            f"{SIZE_MULTIPLE} (the stride of P6); received images of shape {shape}. Pad the "
            "batch (lambda_keras.detection data pipelines do)."
        )


def _static_image_size(images) -> tuple[int, int]:
    """The traced images' height and width:
    [`_check_images`][lambda_keras.detection.mask_rcnn._check_images]'s rule, and both known."""
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
    one_hot = K.one_hot(classes, mask_logits.shape[-1], dtype=mask_logits.dtype)
    return K.sum(mask_logits * one_hot[:, :, None, None, :], -1)


def _varying_shapes(tensor, tensorflow_graph: bool = False) -> bool:
    """Whether shapes may depend on ``tensor``'s values here: on eager PyTorch (not in a
    compiled step's trace, not under ``torch.compile``, not in a symbolic pass), and in a
    TensorFlow graph that no XLA compiles (``tensorflow_graph``: Keras' step of a model not
    jit-compiled, off TPUs). Never under JAX's ``jit``."""
    backend = keras.backend.backend()
    if backend == "tensorflow":
        return tensorflow_graph
    return backend == "torch" and stateless_steps.has_values(tensor)


def _most_per_image(flags):
    """The largest count of set ``flags`` ``[b, R]`` of one image, at least one: an int on
    PyTorch, a scalar tensor in a TensorFlow graph."""
    count = K.maximum(K.max(K.sum(K.cast(flags, "int32"), axis=1)), 1)
    return int(count) if keras.backend.backend() == "torch" else count


def _trimmed(sampled: targets.RoiTargets, tensorflow_graph: bool = False) -> targets.RoiTargets:
    """``sampled`` cut to the slots the image with the most sampled RoIs takes, where shapes
    may vary (``_varying_shapes``); unchanged where they must be static.

    The taken slots come first in every image and the others weigh nothing in the box and mask
    losses, so the losses and their gradients are the same, while the box head runs on the RoIs
    torchvision's would: its sampler takes up to 512 RoIs from the valid proposals only, far
    fewer than 512 when NMS leaves few (a model early in training).
    """
    if not _varying_shapes(sampled.valid, tensorflow_graph):
        return sampled
    count = _most_per_image(sampled.valid)
    static = isinstance(count, int)
    return dataclasses.replace(
        sampled,
        rois=sampled.rois[:, :count],
        valid=sampled.valid[:, :count],
        classes=sampled.classes[:, :count],
        deltas=sampled.deltas[:, :count],
        matched=sampled.matched[:, :count],
        num_foreground=min(sampled.num_foreground, count) if static else sampled.num_foreground,
    )


def _mask_roi_count(sampled: targets.RoiTargets, tensorflow_graph: bool = False):
    """How many of the first ``num_foreground`` RoI slots the mask head trains on: all of them
    where shapes must be static (``_varying_shapes``); elsewhere only as many as the image with
    the most foreground RoIs has (at least one).

    The foreground fills the first slots of each image (``sample_rois``) and the other slots
    weigh nothing in the mask loss, so the loss and its gradient are the same while the mask
    head, four 3x3 convolutions on 14x14 maps per RoI, runs on the RoIs torchvision's would
    (its mask head takes the positive RoIs only).
    """
    count = sampled.num_foreground
    foreground = sampled.classes[:, :count]
    if not _varying_shapes(foreground, tensorflow_graph):
        return count
    return _most_per_image(foreground > 0)


def _rpn_losses(objectness, deltas, anchors, gt_boxes, gt_classes, seed):
    labels, weights, target_deltas = targets.rpn_targets(anchors, gt_boxes, gt_classes, seed=seed)
    objectness = K.cast(objectness, "float32")
    count = K.maximum(K.sum(weights), 1.0)
    bce = K.binary_crossentropy(labels, objectness, from_logits=True)
    box = K.sum(smooth_l1(K.cast(deltas, "float32") - target_deltas, 1 / 9), -1)
    return {
        "rpn_objectness": K.sum(bce * weights) / count,
        "rpn_box": K.sum(box * labels) / count,
    }


def _box_head_losses(logits, deltas, sampled: targets.RoiTargets):
    valid = K.cast(sampled.valid, "float32")
    count = K.maximum(K.sum(valid), 1.0)
    ce = K.sparse_categorical_crossentropy(
        sampled.classes, K.cast(logits, "float32"), from_logits=True
    )
    foreground = K.cast(sampled.classes > 0, "float32")
    deltas = K.cast(deltas, "float32")  # [b, R, C, 4]
    picked = K.maximum(sampled.classes - 1, 0)[:, :, None, None]
    picked = K.broadcast_to(picked, (*K.shape(picked)[:2], 1, 4))
    chosen = K.take_along_axis(deltas, picked, axis=2)[:, :, 0]
    box = K.sum(smooth_l1(chosen - sampled.deltas, 1 / 9), -1)
    return {
        "classification": K.sum(ce * valid) / count,
        "box": K.sum(box * foreground) / count,
    }
