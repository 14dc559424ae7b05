"""Feature-pyramid backbones for detection: LambdaResNets (the paper's and timm's) and ResNet-RS
without their head.

A backbone is a ``keras.Model`` from images ``[batch, height, width, 3]`` to the dict of the
last feature map of each stage, also kept as its attribute ``pyramid_outputs`` (keras-hub's
convention, so it plugs into keras-hub detectors as an ``image_encoder``)::

    {"P2": [b, h/4, w/4, 256 * width], "P3": [b, h/8, w/8, 512 * width],
     "P4": [b, h/16, w/16, 1024 * width], "P5": [b, h/32, w/32, 2048 * width]}

Height and width may be None (any image size) but must be multiples of 32: the rule is checked
when the backbone is built on a known size and when it is called.

The layers are those of the zoo's classifier of the same depth (same names), so
``weights=`` loads the classifier's weights without its head through the weights registry.
The lambda layers default to the lambda convolution (``implementation="conv"``), whose memory is
linear in the number of positions at any image size (the einsum's embeddings grow with its
square, which at detection resolutions does not fit).

Batch norm (``batch_norm=``): ``"standard"`` (per replica), ``"synchronized"`` (statistics
across the replicas of a TensorFlow distribution strategy, the paper's from-scratch Mask
R-CNN, App. F.3) or ``"frozen"`` (every batch norm, the lambda layers' included, in inference
mode with untrainable parameters: the usual choice when fine-tuning from classification
weights). On JAX, ``keras.distribution`` runs a step as one program over every device, so
batch-norm statistics are over the global batch already: ``"synchronized"`` leaves Keras'
layers as they are there (Keras' ``synchronized=True`` does not run on JAX). PyTorch has no
synchronized batch norm in Keras: ``"synchronized"`` is refused there.
"""

from __future__ import annotations

import keras

from lambda_keras import _validation as v
from lambda_keras.layers.model_layers import all_layers
from lambda_keras.zoo import applications, timm_lambda_resnet
from lambda_keras.zoo.resnet_blocks import LambdaConfig
from lambda_keras.zoo.resnet_family import DEPTHS, SPECS, build_family_model

__all__ = [
    "BATCH_NORM_MODES",
    "PYRAMID_LEVELS",
    "LambdaResNetBackbone",
    "ResNetRSBackbone",
    "TimmLambdaResNetBackbone",
]

BATCH_NORM_MODES = ("standard", "synchronized", "frozen")
"""The pyramid backbones' `batch_norm` values: per-replica, synchronised across replicas, or
frozen (inference statistics, no updates)."""
# Pyramid level -> the zoo stage whose last block output it is (its stride is 2**level).
PYRAMID_LEVELS = {"P2": 0, "P3": 1, "P4": 2, "P5": 3}
"""The pyramid levels a backbone outputs (strides 4 to 32) and the stage each is taken from
(0 = c2 ... 3 = c5)."""
STRIDE = 32


class _PyramidBackbone(keras.Model):
    """What every backbone shares: a zoo classifier's body (built without its head) cut at the
    last block of each stage, batch-norm modes, size checks.

    Subclasses build the body and add their own arguments to ``get_config``.
    """

    def __init__(
        self,
        body: keras.Model,
        *,
        stage_blocks: tuple[int, ...],
        input_shape: tuple[int | None, int | None, int],
        batch_norm: str,
        name: str,
        **kwargs,
    ):
        pyramid = {
            level: body.get_layer(_stage_output(stage, stage_blocks)).output
            for level, stage in PYRAMID_LEVELS.items()
        }
        super().__init__(inputs=body.input, outputs=pyramid, name=name, **kwargs)
        self.pyramid_outputs = pyramid
        self.batch_norm = batch_norm
        self.image_shape = input_shape
        _apply_batch_norm_mode(self, batch_norm)

    @property
    def trainable(self) -> bool:
        return keras.Model.trainable.fget(self)

    @trainable.setter
    def trainable(self, value: bool) -> None:
        # Keras sets every sub-layer to `value`: frozen batch norm stays frozen (fine-tuning
        # freezes a backbone, then unfreezes it).
        keras.Model.trainable.fset(self, value)
        if getattr(self, "batch_norm", None) == "frozen":
            _apply_batch_norm_mode(self, "frozen")

    def __call__(self, inputs, *args, **kwargs):
        # Before Keras traces the call (an error raised inside it would print the whole input).
        if hasattr(inputs, "shape"):
            _check_image_size(tuple(inputs.shape))
        return super().__call__(inputs, *args, **kwargs)

    def get_config(self) -> dict:
        # The constructor's arguments (keras-hub's Backbone does the same); weights come from
        # the saved file, never fetched again when a saved backbone is loaded.
        return {
            "name": self.name,
            "trainable": self.trainable,
            "input_shape": self.image_shape,
            "weights": None,
            "batch_norm": self.batch_norm,
        }

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class _FamilyBackbone(_PyramidBackbone):
    """The paper's families (``resnet_family``): a depth, stochastic depth and a width
    multiplier; subclasses name the zoo model to build and its squeeze-and-excitation stages
    and lambda-layer settings (``family_options``, passed to ``build_family_model``)."""

    def __init__(
        self,
        depth: int,
        *,
        model_name: str,
        family_options: dict,
        input_shape: tuple[int | None, int | None, int],
        weights: str | None,
        batch_norm: str,
        stochastic_depth_rate: float,
        width_multiplier: float,
        name: str | None,
        **kwargs,
    ):
        depth = check_depth(depth)
        _check_batch_norm(batch_norm)
        input_shape = _check_input_shape(input_shape)
        body = build_family_model(
            SPECS[model_name],
            applications.ApplicationArgs(
                include_top=False, weights=weights, input_shape=input_shape, name=model_name
            ),
            dropout_rate=0.0,
            stochastic_depth_rate=stochastic_depth_rate,
            width_multiplier=width_multiplier,
            **family_options,
        )
        super().__init__(
            body,
            stage_blocks=DEPTHS[depth].blocks,
            input_shape=input_shape,
            batch_norm=batch_norm,
            name=name or f"{model_name}_backbone",
            **kwargs,
        )
        self.depth = depth
        self.stochastic_depth_rate = stochastic_depth_rate
        self.width_multiplier = width_multiplier

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "depth": self.depth,
            "stochastic_depth_rate": self.stochastic_depth_rate,
            "width_multiplier": self.width_multiplier,
        }


def _check_batch_norm(batch_norm) -> None:
    v.one_of("batch_norm", batch_norm, BATCH_NORM_MODES)
    if batch_norm == "synchronized" and keras.backend.backend() == "torch":
        raise ValueError(
            "batch_norm='synchronized' needs Keras on TensorFlow or JAX (Keras' "
            "BatchNormalization(synchronized=True) does not run on PyTorch); received it "
            "with the torch backend. Use batch_norm='standard' or 'frozen'."
        )


def check_depth(depth, name: str = "depth") -> int:
    """``depth`` as an int, one of ``DEPTHS`` (``50.0`` or ``True`` is refused: the depth
    names the model, ``lambda_resnet50``); the error names the argument ``name``."""
    if not v.is_int(depth) or depth not in DEPTHS:
        raise ValueError(
            f"`{name}` must be one of {', '.join(map(str, DEPTHS))} (an int); received "
            f"{name}={depth!r}."
        )
    return int(depth)


def _stage_output(stage: int, blocks: tuple[int, ...]) -> str:
    """Name of the output of the last block of ``stage`` (0-based, c2..c5)."""
    return "features" if stage == 3 else f"c{stage + 2}_block{blocks[stage]}_out"


def _check_input_shape(input_shape, name: str = "input_shape") -> tuple:
    sides = v.sequence(name, input_shape, "a tuple (height, width, channels)")
    if len(sides) != 3:
        raise ValueError(
            f"`{name}` must be (height, width, channels); received {name}={input_shape!r}."
        )
    _check_image_size((None, *sides), name=name)
    return tuple(int(side) if v.is_int(side) else side for side in sides)  # NumPy's ints too


def _check_image_size(shape, name: str = "images") -> None:
    """Height and width (where known) must be multiples of 32, the stride of P5."""
    for side in shape[1:3]:
        if side is not None and (not v.is_int(side) or side < STRIDE or side % STRIDE):
            raise ValueError(
                f"The backbone's image height and width must be multiples of {STRIDE} (at least "
                f"{STRIDE}), or None for any such size; received {name} of shape "
                f"{tuple(shape) if name == 'images' else tuple(shape[1:])}. Pad or resize "
                "the images first."
            )


def _apply_batch_norm_mode(model: keras.Model, mode: str) -> None:
    """Every batch norm of ``model``, the lambda layers' included, in ``mode``."""
    for layer in all_layers(model):
        if not isinstance(layer, keras.layers.BatchNormalization):
            continue
        if mode == "synchronized" and keras.backend.backend() == "tensorflow":
            # Read when the layer is called (keras.ops.moments(synchronized=...)); on JAX the
            # statistics are over the global batch already (module docstring).
            layer.synchronized = True
        elif mode == "frozen":
            # A Keras 3 batch norm that is not trainable normalises with its moving statistics.
            layer.trainable = False


@keras.saving.register_keras_serializable(package="lambda_keras")
class LambdaResNetBackbone(_FamilyBackbone):
    """LambdaResNet-``depth`` (paper Table 19; ``c4=True``: the -C4 variant) as a pyramid backbone.

    Args:
        depth: 50, 101, 152, 200, 270, 350 or 420.
        c4: Lambda layers in every block of c4 and c5 (``LambdaResNet<depth>C4``).
        input_shape: ``(height, width, 3)``; height and width multiples of 32 or None.
        weights: None, a registered weights name of ``lambda_resnet<depth>[_c4]`` or the path
            to a ``.weights.h5`` file saved from a backbone of the same architecture.
        batch_norm: ``"standard"``, ``"synchronized"`` or ``"frozen"`` (module docstring).
        implementation: The lambda layers' implementation (``"conv"``: linear memory).
        stochastic_depth_rate: Stochastic depth of the last stage (0 by default).
        width_multiplier: Scales every stage's channels (1.0 is the paper's model).
        name: Model name.

    Call: images ``[batch, height, width, 3]`` -> dict of ``P2``...``P5``, also
    ``pyramid_outputs``.
    """

    def __init__(
        self,
        depth: int = 50,
        c4: bool = False,
        input_shape: tuple[int | None, int | None, int] = (None, None, 3),
        weights: str | None = None,
        batch_norm: str = "standard",
        implementation: str = "conv",
        stochastic_depth_rate: float = 0.0,
        width_multiplier: float = 1.0,
        name: str | None = None,
        **kwargs,
    ):
        model_name = self.classifier_name(depth, c4)
        options = {
            "se_stages": SPECS[model_name].se_stages(True, se_in_lambda_stages=False),
            "lambda_config": LambdaConfig(implementation=implementation),
        }
        super().__init__(
            depth,
            model_name=model_name,
            family_options=options,
            input_shape=input_shape,
            weights=weights,
            batch_norm=batch_norm,
            stochastic_depth_rate=stochastic_depth_rate,
            width_multiplier=width_multiplier,
            name=name,
            **kwargs,
        )
        self.c4 = c4
        self.implementation = implementation

    @staticmethod
    def classifier_name(depth: int, c4: bool = False) -> str:
        """The zoo classifier whose body this backbone is (its weights' architecture)."""
        return f"lambda_resnet{check_depth(depth)}{'_c4' if v.boolean('c4', c4) else ''}"

    def get_config(self) -> dict:
        return {**super().get_config(), "c4": self.c4, "implementation": self.implementation}


@keras.saving.register_keras_serializable(package="lambda_keras")
class ResNetRSBackbone(_FamilyBackbone):
    """ResNet-RS-``depth`` as a pyramid backbone (the paper's convolutional baseline).

    Args:
        depth: 50, 101, 152, 200, 270, 350 or 420.
        se: Squeeze-and-excitation in every block (ResNet-RS; timm's ImageNet weights have it).
        input_shape, weights, batch_norm, stochastic_depth_rate, width_multiplier, name: As
            [`LambdaResNetBackbone`][lambda_keras.zoo.pyramid_backbone.LambdaResNetBackbone];
            ``weights="imagenet"`` loads timm's ``resnetrs<depth>.tf_in1k`` classifier without its
            head (converted on first use).

    Call: images ``[batch, height, width, 3]`` -> dict of ``P2``...``P5``, also
    ``pyramid_outputs``.
    """

    def __init__(
        self,
        depth: int = 50,
        se: bool = True,
        input_shape: tuple[int | None, int | None, int] = (None, None, 3),
        weights: str | None = None,
        batch_norm: str = "standard",
        stochastic_depth_rate: float = 0.0,
        width_multiplier: float = 1.0,
        name: str | None = None,
        **kwargs,
    ):
        model_name = self.classifier_name(depth)
        options = {
            "se_stages": SPECS[model_name].se_stages(
                v.boolean("se", se), se_in_lambda_stages=False
            ),
            "lambda_config": LambdaConfig(),
        }
        super().__init__(
            depth,
            model_name=model_name,
            family_options=options,
            input_shape=input_shape,
            weights=weights,
            batch_norm=batch_norm,
            stochastic_depth_rate=stochastic_depth_rate,
            width_multiplier=width_multiplier,
            name=name,
            **kwargs,
        )
        self.se = se

    @staticmethod
    def classifier_name(depth: int) -> str:
        """The zoo classifier whose body this backbone is (its weights' architecture)."""
        return f"resnet_rs{check_depth(depth)}"

    def get_config(self) -> dict:
        return {**super().get_config(), "se": self.se}


@keras.saving.register_keras_serializable(package="lambda_keras")
class TimmLambdaResNetBackbone(_PyramidBackbone):
    """One of timm's ImageNet LambdaResNets
    ([`timm_lambda_resnet`][lambda_keras.zoo.timm_lambda_resnet]) as a pyramid backbone.

    Args:
        model: ``"lambda_resnet26t"``, ``"lambda_resnet26rpt_256"`` or ``"lambda_resnet50ts"``.
        input_shape: ``(height, width, 3)``; height and width multiples of 32 or None. None
            (the default): ``default_input_shape(model)``, ``(None, None, 3)`` or, for
            ``lambda_resnet26rpt_256``, ``(256, 256, 3)`` (its relative position embeddings).
        weights: None, ``"imagenet"`` (timm's weights without the head, through the weights
            registry) or the path to a ``.weights.h5`` file saved from the same backbone.
        batch_norm: ``"standard"``, ``"synchronized"`` or ``"frozen"`` (module docstring).
        implementation: The lambda layers' implementation (``"conv"``: linear memory).
        name: Model name.

    Call: images ``[batch, height, width, 3]`` -> dict of ``P2``...``P5`` (256, 512, 1024 and
    2048 channels), also ``pyramid_outputs``.

    Examples:
        >>> from lambda_keras import zoo
        >>> backbone = zoo.TimmLambdaResNetBackbone("lambda_resnet26t")
        >>> levels = backbone.pyramid_outputs
        >>> {level: tuple(output.shape) for level, output in levels.items()}
        ... # doctest: +NORMALIZE_WHITESPACE
        {'P2': (None, None, None, 256), 'P3': (None, None, None, 512),
         'P4': (None, None, None, 1024), 'P5': (None, None, None, 2048)}
    """

    def __init__(
        self,
        model: str = "lambda_resnet50ts",
        input_shape: tuple[int | None, int | None, int] | None = None,
        weights: str | None = None,
        batch_norm: str = "standard",
        implementation: str = "conv",
        name: str | None = None,
        **kwargs,
    ):
        v.one_of("model", model, tuple(timm_lambda_resnet.SPECS))
        if input_shape is None:
            input_shape = self.default_input_shape(model)
        _check_batch_norm(batch_norm)
        input_shape = _check_input_shape(input_shape)
        body = timm_lambda_resnet.build(
            model,
            implementation=implementation,
            include_top=False,
            weights=weights,
            input_shape=input_shape,
            name=model,
        )
        stages = timm_lambda_resnet.SPECS[model].stages
        super().__init__(
            body,
            stage_blocks=tuple(stage.blocks for stage in stages),
            input_shape=input_shape,
            batch_norm=batch_norm,
            name=name or f"{model}_backbone",
            **kwargs,
        )
        self.model = model
        self.implementation = implementation

    @staticmethod
    def default_input_shape(model: str) -> tuple[int | None, int | None, int]:
        """``(None, None, 3)``, or the fixed size of a model with relative position embeddings
        (``lambda_resnet26rpt_256``: ``(256, 256, 3)``)."""
        spec = timm_lambda_resnet.SPECS[v.one_of("model", model, tuple(timm_lambda_resnet.SPECS))]
        side = spec.image_size if spec.fixed_input_size else None
        return (side, side, 3)

    def get_config(self) -> dict:
        return {**super().get_config(), "model": self.model, "implementation": self.implementation}
