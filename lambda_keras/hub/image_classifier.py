"""keras-hub image classifiers on the zoo's backbones, with the preprocessing of each weights
file: the preset of every registered ImageNet file ([`presets`][lambda_keras.hub.presets]).

For each backbone of [`backbones`][lambda_keras.hub.backbones], keras-hub's three classes:

* an image converter: the evaluation transform of the weights (the shorter side resized,
  bicubic and antialiased, to ``image_size / crop_fraction``, then the central square: the
  zoo's ``eval_image``, in ``tf.data`` exactly, on Keras' backend within 0.013 on the
  ``[0, 255]`` scale; image by image for photos of several sizes), then ``scale`` and
  ``offset`` (the ImageNet mean and standard
  deviation of the ``"torch"`` preprocessing);
* an ``ImageClassifierPreprocessor`` holding it;
* an ``ImageClassifier``: the backbone, global average pooling, dropout and a dense layer
  (keras-hub's head; the zoo classifier's ``predictions`` layer holds the same weights).

keras-hub's ``ImageClassifier.from_preset`` picks the classifier whose ``backbone_cls`` is the
preset's backbone class. A preset's classifier gives the zoo model's predictions on the same
photo: ``classifier.predict(photos)`` is
``get_model(name, weights="imagenet").predict(preprocess_input(eval_image(photo)))``.

Examples:
    ```python
    import keras_hub
    import lambda_keras.hub

    classifier = lambda_keras.hub.TimmLambdaResNetImageClassifier.from_preset(
        "lambda_resnet50ts_imagenet"
    )
    # photos of any shape, uint8 [0, 255]: cropped and scaled as the weights'
    probabilities = classifier.predict(photos)
    ```
"""

from __future__ import annotations

import keras
import keras_hub

from lambda_keras import preprocessing
from lambda_keras.hub import backbones
from lambda_keras.hub.presets import project_presets, register_preset_builder
from lambda_keras.zoo import resnet_family, timm_lambda_resnet
from lambda_keras.zoo.registry import get_model
from lambda_keras.zoo.weights_spec import WeightsSpec

__all__ = [
    "LambdaResNetImageClassifier",
    "LambdaResNetImageClassifierPreprocessor",
    "LambdaResNetImageConverter",
    "ResNetRSImageClassifier",
    "ResNetRSImageClassifierPreprocessor",
    "ResNetRSImageConverter",
    "TimmLambdaResNetImageClassifier",
    "TimmLambdaResNetImageClassifierPreprocessor",
    "TimmLambdaResNetImageConverter",
    "classifier_with_weights",
    "normalization",
]


class _EvalImageConverter(keras_hub.layers.ImageConverter):
    """keras-hub's image converter with the evaluation crop of a weights file.

    Args:
        image_size: ``(size, size)``: the square the weights were evaluated at, or None (no
            resizing).
        crop_fraction: The fraction of the resized shorter side the crop keeps, in (0, 1]
            (``1.0``: the whole shorter side).
        scale, offset: Per-channel ``x * scale + offset`` after the crop
            ([`normalization`][lambda_keras.hub.image_classifier.normalization]).
        **kwargs: keras-hub's ``ImageConverter`` arguments.

    Call: images ``[batch, height, width, 3]`` or ``[height, width, 3]`` in ``[0, 255]``, or a
    list of images of any sizes -> ``[batch, size, size, 3]`` (or ``[size, size, 3]``).
    """

    def __init__(
        self,
        image_size: tuple[int, int] | None = None,
        crop_fraction: float = 1.0,
        interpolation: str = "bicubic",
        antialias: bool = True,
        **kwargs,
    ):
        if image_size is not None and (
            not isinstance(image_size, (tuple, list))
            or len(image_size) != 2
            or image_size[0] != image_size[1]
        ):
            raise ValueError(
                "`image_size` must be a square (size, size), the size the weights were "
                f"evaluated at, or None; received image_size={image_size!r}."
            )
        super().__init__(
            image_size=image_size, interpolation=interpolation, antialias=antialias, **kwargs
        )
        self.crop_fraction = preprocessing.check_crop_fraction(crop_fraction)

    def call(self, inputs):
        if self.image_size is not None and not isinstance(inputs, dict):
            # then keras-hub's resizing, at the same size, leaves the crop as it is
            inputs = self._eval_crop(inputs)
        return super().call(inputs)

    def _eval_crop(self, images):
        """The zoo's ``eval_image``: in a ``tf.data`` pipeline on the TensorFlow tensors, else
        on Keras' backend (``eval_image_on_backend``, no TensorFlow needed). A list of images
        of several sizes (a ragged tensor, as keras-hub's preprocessors pass it) is cropped
        image by image."""
        size, fraction = self.image_size[0], self.crop_fraction
        if type(images).__name__ == "RaggedTensor":
            return self._eval_crop_each(images)
        if self._use_tf_workflow():
            return preprocessing.eval_image(images, size, fraction)
        if isinstance(images, (list, tuple)):
            return keras.ops.stack([self._eval_crop(image) for image in images])
        return preprocessing.eval_image_on_backend(images, size, fraction)

    def _eval_crop_each(self, images):
        """``[batch, (height), (width), channels]`` ragged -> ``[batch, size, size, channels]``:
        each image on its own (padding them to one size first would crop the padding)."""
        import tensorflow as tf

        size = self.image_size[0]
        def dense(image):  # a row is ragged, or dense where the batch is ragged in one axis
            return image.to_tensor() if isinstance(image, tf.RaggedTensor) else image

        if tf.executing_eagerly():
            return keras.ops.stack([self._eval_crop(dense(image).numpy()) for image in images])

        def crop(image):
            return preprocessing.eval_image(dense(image), size, self.crop_fraction)

        spec = tf.TensorSpec((size, size, None), tf.float32)
        return tf.map_fn(crop, images, fn_output_signature=spec)

    def get_config(self) -> dict:
        return {**super().get_config(), "crop_fraction": self.crop_fraction}


def normalization(preprocessing_mode: str) -> dict[str, list[float] | float]:
    """The converter's ``scale`` and ``offset`` for a weights file's ``preprocessing``
    ([`WeightsSpec`][lambda_keras.zoo.weights_spec.WeightsSpec]): ``"torch"`` (the ImageNet
    mean and standard deviation) or ``"tf"`` (``[-1, 1]``)."""
    if preprocessing_mode == "torch":
        scale = 1.0 / preprocessing.IMAGENET_STD
        return {"scale": scale.tolist(), "offset": (-preprocessing.IMAGENET_MEAN * scale).tolist()}
    if preprocessing_mode == "tf":
        return {"scale": 1.0 / 127.5, "offset": -1.0}
    raise ValueError(
        "keras-hub's image converter scales RGB channels; the preprocessing of these weights "
        f"must be 'torch' or 'tf'; received {preprocessing_mode!r}."
    )


# --- The paper's LambdaResNets ------------------------------------------------------------


@keras.saving.register_keras_serializable(package="lambda_keras.hub")
class LambdaResNetImageConverter(_EvalImageConverter):
    """The image converter of [`LambdaResNetBackbone`][lambda_keras.hub.LambdaResNetBackbone]
    (``_EvalImageConverter``: the evaluation crop, then scale and offset)."""

    backbone_cls = backbones.LambdaResNetBackbone


@keras.saving.register_keras_serializable(package="lambda_keras.hub")
class LambdaResNetImageClassifierPreprocessor(keras_hub.models.ImageClassifierPreprocessor):
    """keras-hub's preprocessor of the paper's LambdaResNets."""

    backbone_cls = backbones.LambdaResNetBackbone
    image_converter_cls = LambdaResNetImageConverter


@keras.saving.register_keras_serializable(package="lambda_keras.hub")
@project_presets
class LambdaResNetImageClassifier(keras_hub.models.ImageClassifier):
    """An image classifier on the paper's LambdaResNets: keras-hub's ``ImageClassifier``
    (``backbone``, ``num_classes``, ``preprocessor``, ``pooling``, ``activation``,
    ``dropout``, ``head_dtype``) on a
    [`LambdaResNetBackbone`][lambda_keras.hub.LambdaResNetBackbone]. Its subclasses
    [`TimmLambdaResNetImageClassifier`][lambda_keras.hub.TimmLambdaResNetImageClassifier] and
    [`ResNetRSImageClassifier`][lambda_keras.hub.ResNetRSImageClassifier] hold the registry's
    ImageNet weights: ``LambdaResNetImageClassifier.from_preset`` loads every project preset
    (``lambda_keras.hub.list_presets()``) as the subclass of its backbone.

    Call: images ``[batch, height, width, 3]`` (after the preprocessor) -> ``[batch,
    num_classes]``.

    Examples:
        >>> import lambda_keras.hub
        >>> backbone = lambda_keras.hub.LambdaResNetBackbone(width_multiplier=0.125)
        >>> classifier = lambda_keras.hub.LambdaResNetImageClassifier(
        ...     backbone, num_classes=10
        ... )
        >>> classifier.output.shape
        (None, 10)
    """

    backbone_cls = backbones.LambdaResNetBackbone
    preprocessor_cls = LambdaResNetImageClassifierPreprocessor


# --- timm's LambdaResNets ------------------------------------------------------------------


@keras.saving.register_keras_serializable(package="lambda_keras.hub")
class TimmLambdaResNetImageConverter(_EvalImageConverter):
    """The image converter of
    [`TimmLambdaResNetBackbone`][lambda_keras.hub.TimmLambdaResNetBackbone]."""

    backbone_cls = backbones.TimmLambdaResNetBackbone


@keras.saving.register_keras_serializable(package="lambda_keras.hub")
class TimmLambdaResNetImageClassifierPreprocessor(keras_hub.models.ImageClassifierPreprocessor):
    """keras-hub's preprocessor of timm's LambdaResNets."""

    backbone_cls = backbones.TimmLambdaResNetBackbone
    image_converter_cls = TimmLambdaResNetImageConverter


@keras.saving.register_keras_serializable(package="lambda_keras.hub")
class TimmLambdaResNetImageClassifier(LambdaResNetImageClassifier):
    """An image classifier on timm's LambdaResNets (as
    [`LambdaResNetImageClassifier`][lambda_keras.hub.LambdaResNetImageClassifier], on a
    [`TimmLambdaResNetBackbone`][lambda_keras.hub.TimmLambdaResNetBackbone]); presets
    ``lambda_resnet26t_imagenet``, ``lambda_resnet26rpt_256_imagenet`` and
    ``lambda_resnet50ts_imagenet``, which ``LambdaResNetImageClassifier.from_preset`` loads as
    this class too (keras-hub picks the subclass of the preset's backbone)."""

    backbone_cls = backbones.TimmLambdaResNetBackbone
    preprocessor_cls = TimmLambdaResNetImageClassifierPreprocessor


# --- ResNet-RS ----------------------------------------------------------------------------


@keras.saving.register_keras_serializable(package="lambda_keras.hub")
class ResNetRSImageConverter(_EvalImageConverter):
    """The image converter of [`ResNetRSBackbone`][lambda_keras.hub.ResNetRSBackbone]."""

    backbone_cls = backbones.ResNetRSBackbone


@keras.saving.register_keras_serializable(package="lambda_keras.hub")
class ResNetRSImageClassifierPreprocessor(keras_hub.models.ImageClassifierPreprocessor):
    """keras-hub's preprocessor of ResNet-RS."""

    backbone_cls = backbones.ResNetRSBackbone
    image_converter_cls = ResNetRSImageConverter


@keras.saving.register_keras_serializable(package="lambda_keras.hub")
class ResNetRSImageClassifier(LambdaResNetImageClassifier):
    """An image classifier on ResNet-RS, the paper's convolutional baseline (as
    [`LambdaResNetImageClassifier`][lambda_keras.hub.LambdaResNetImageClassifier], on a
    [`ResNetRSBackbone`][lambda_keras.hub.ResNetRSBackbone]); presets
    ``resnet_rs50_imagenet`` ... ``resnet_rs420_imagenet``, which
    ``LambdaResNetImageClassifier.from_preset`` loads as this class too."""

    backbone_cls = backbones.ResNetRSBackbone
    preprocessor_cls = ResNetRSImageClassifierPreprocessor


# --- Presets from the weights registry ----------------------------------------------------


def _family(architecture: str) -> tuple[type, dict, type]:
    """The hub backbone class, its arguments and the classifier class of a zoo
    architecture."""
    if architecture in timm_lambda_resnet.SPECS:
        # "auto": the zoo classifier's choice at the weights' size
        arguments = {"model": architecture, "implementation": "auto"}
        return backbones.TimmLambdaResNetBackbone, arguments, TimmLambdaResNetImageClassifier
    depth = resnet_family.SPECS[architecture].depth.depth
    if architecture.startswith("resnet_rs"):
        return backbones.ResNetRSBackbone, {"depth": depth}, ResNetRSImageClassifier
    arguments = {"depth": depth, "c4": architecture.endswith("_c4"), "implementation": "auto"}
    return backbones.LambdaResNetBackbone, arguments, LambdaResNetImageClassifier


def classifier_with_weights(spec: WeightsSpec) -> keras_hub.models.ImageClassifier:
    """The keras-hub classifier holding the registered weights ``spec``: the zoo model loaded
    through the registry (its file checked and converted), its weights assigned by name to the
    classifier, whose converter has the file's evaluation size, crop and normalisation."""
    backbone_cls, arguments, classifier_cls = _family(spec.architecture)
    size = spec.input_size
    # In float32 whatever the global policy: the preset is cached for every later user.
    with backbones.global_dtype_policy("float32"):
        source = get_model(spec.architecture, weights=spec.name)
        converter = classifier_cls.preprocessor_cls.image_converter_cls(
            image_size=(size, size),
            crop_fraction=spec.crop_fraction,
            **normalization(spec.preprocessing),
        )
        classifier = classifier_cls(
            backbone=backbone_cls(**arguments),
            num_classes=spec.classes,
            preprocessor=classifier_cls.preprocessor_cls(converter),
            activation="softmax",  # as the zoo's classifiers: probabilities
        )
    _assign_by_path(source, classifier, spec.name)
    return classifier


def _assign_by_path(source: keras.Model, target: keras.Model, name: str) -> None:
    """Every weight of ``target`` from ``source``'s weight of the same path (layer and
    variable name); both must hold exactly the same paths."""
    values = {weight.path: weight for weight in source.weights}
    paths = [weight.path for weight in target.weights]
    unique = len(set(paths)) == len(paths) and len(values) == len(source.weights)
    if sorted(paths) != sorted(values) or not unique:
        missing = sorted(set(paths) - set(values))[:5]
        extra = sorted(set(values) - set(paths))[:5]
        raise RuntimeError(
            f"The keras-hub classifier of weights {name!r} does not have the zoo model's "
            f"weights: missing from the zoo model {missing}, not in the classifier {extra}."
        )
    for weight in target.weights:
        weight.assign(values[weight.path])


for _architecture in (*timm_lambda_resnet.SPECS, *resnet_family.SPECS):
    if _architecture.startswith(("lambda_resnet", "resnet_rs")):
        register_preset_builder(_architecture, classifier_with_weights)
