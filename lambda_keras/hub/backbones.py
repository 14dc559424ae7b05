"""The zoo's pyramid backbones as keras-hub backbones.

Each class nests the zoo's backbone of the same name
([`pyramid_backbone`][lambda_keras.zoo.pyramid_backbone]: the same layers, no second copy of
the architecture) in a `keras_hub.models.FeaturePyramidBackbone` (a keras-hub `Backbone`, as
its own ResNet's). As keras-hub's ResNet, the backbone's output is its last feature map (P5,
what an `ImageClassifier` pools) and its `pyramid_outputs` are its P2-P5 feature maps
(keras-hub's convention for the image encoders of its detectors and segmenters)::

    {"P2": [b, h/4, w/4, 256 * width], "P3": [b, h/8, w/8, 512 * width],
     "P4": [b, h/16, w/16, 1024 * width], "P5": [b, h/32, w/32, 2048 * width]}

`save_to_preset(directory)` writes keras-hub's preset files (`config.json`, `metadata.json`,
`model.weights.h5`) and the project's `lambda_keras.json`
([`presets`][lambda_keras.hub.presets]), and `keras_hub.models.Backbone.from_preset(directory)`
builds the class again from the configuration and loads the weights, once `lambda_keras.hub`
is imported. The classes are registered as `lambda_keras.hub>LambdaResNetBackbone`,
`lambda_keras.hub>TimmLambdaResNetBackbone` and `lambda_keras.hub>ResNetRSBackbone` (the zoo's
own are `lambda_keras>...`); their `from_preset` also takes the project's preset names.
"""

from __future__ import annotations

import contextlib

import keras
import keras_hub

from lambda_keras.hub.presets import check_saved_arguments, project_presets
from lambda_keras.zoo import pyramid_backbone

__all__ = ["LambdaResNetBackbone", "ResNetRSBackbone", "TimmLambdaResNetBackbone"]


@project_presets
class _HubPyramidBackbone(keras_hub.models.FeaturePyramidBackbone):
    """What all share: the zoo's backbone ``BODY`` nested as one layer, images of
    ``image_shape`` in, P5 out and P2-P5 as ``pyramid_outputs``; the configuration is the
    constructor's arguments."""

    BODY: type

    def __init__(
        self,
        *,
        image_shape: tuple[int | None, int | None, int],
        weights: str | None,
        body_options: dict,
        dtype=None,
        **kwargs,
    ):
        image_shape = pyramid_backbone._check_input_shape(image_shape, name="image_shape")
        with global_dtype_policy(dtype):
            body = self.BODY(input_shape=image_shape, weights=weights, **body_options)
            images = keras.Input(image_shape, name="images")
            pyramid = body(images)
        super().__init__(inputs=images, outputs=pyramid["P5"], dtype=dtype, **kwargs)
        self.pyramid_outputs = pyramid
        self.image_shape = image_shape
        self.body_options = dict(body_options)

    def get_config(self) -> dict:
        # weights come from the preset's weights file, never fetched again on loading
        return {**super().get_config(), "image_shape": self.image_shape, **self.body_options}

    @classmethod
    def from_config(cls, config):
        check_saved_arguments(cls, config)
        return cls(**config)


@contextlib.contextmanager
def global_dtype_policy(dtype):
    """The layers made inside take ``dtype`` (a name, a policy or its configuration) as their
    policy, where given: Keras' global policy, set for the construction and restored after it,
    errors included (Keras keeps it per thread: layers another thread makes meanwhile do not
    see it). Quantized policies are refused: a quantized model is made by quantizing a built
    one (``model.quantize``), not by a policy given to its constructor."""
    if dtype is None:
        yield
        return
    policy = keras.dtype_policies.get(dtype)
    if isinstance(policy, keras.dtype_policies.DTypePolicyMap) or policy.quantization_mode:
        raise ValueError(
            f"`dtype` must be a floating-point policy such as 'float32', 'bfloat16' or "
            f"'mixed_bfloat16'; received dtype={dtype!r} (quantized). Build the backbone, "
            "then call its quantize()."
        )
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(policy)
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)


@keras.saving.register_keras_serializable(package="lambda_keras.hub")
class LambdaResNetBackbone(_HubPyramidBackbone):
    """LambdaResNet-``depth`` (paper Table 19) as a keras-hub backbone: the zoo's
    [`LambdaResNetBackbone`][lambda_keras.zoo.pyramid_backbone.LambdaResNetBackbone] inside.

    Args:
        depth: 50, 101, 152, 200, 270, 350 or 420.
        c4: Lambda layers in every block of c4 and c5 (the -C4 variant).
        image_shape: ``(height, width, 3)``; height and width multiples of 32 or None.
        weights: None, a registered weights name of ``lambda_resnet<depth>[_c4]`` or a
            ``.weights.h5`` file of the zoo's backbone, loaded into the body (a preset's weights
            come from the preset).
        batch_norm: ``"standard"``, ``"synchronized"`` or ``"frozen"``.
        implementation: The lambda layers' implementation (``"conv"``: linear memory).
        stochastic_depth_rate: Stochastic depth of the last stage.
        width_multiplier: Scales every stage's channels (1.0 is the paper's model).
        dtype: The layers' dtype policy (a name such as ``"mixed_bfloat16"``); None: Keras'
            global policy.
        **kwargs: ``name``, ``trainable``: as any Keras model's.

    Call: images ``[batch, height, width, 3]`` -> P5 ``[batch, height / 32, width / 32,
    2048 * width_multiplier]``; ``pyramid_outputs``: P2...P5.

    Examples:
        >>> import tempfile
        >>> import keras_hub
        >>> import lambda_keras.hub
        >>> backbone = lambda_keras.hub.LambdaResNetBackbone(width_multiplier=0.125)
        >>> preset = tempfile.mkdtemp()
        >>> backbone.save_to_preset(preset)
        >>> loaded = keras_hub.models.Backbone.from_preset(preset)
        >>> type(loaded).__name__, sorted(loaded.pyramid_outputs)
        ('LambdaResNetBackbone', ['P2', 'P3', 'P4', 'P5'])
        >>> loaded.output.shape
        (None, None, None, 256)
    """

    BODY = pyramid_backbone.LambdaResNetBackbone

    def __init__(
        self,
        depth: int = 50,
        c4: bool = False,
        image_shape: tuple[int | None, int | None, int] = (None, None, 3),
        weights: str | None = None,
        batch_norm: str = "standard",
        implementation: str = "conv",
        stochastic_depth_rate: float = 0.0,
        width_multiplier: float = 1.0,
        dtype=None,
        **kwargs,
    ):
        options = {
            "depth": pyramid_backbone.check_depth(depth),  # an int in the configuration
            "c4": c4,
            "batch_norm": batch_norm,
            "implementation": implementation,
            "stochastic_depth_rate": stochastic_depth_rate,
            "width_multiplier": width_multiplier,
        }
        super().__init__(
            image_shape=image_shape, weights=weights, body_options=options, dtype=dtype, **kwargs
        )


@keras.saving.register_keras_serializable(package="lambda_keras.hub")
class ResNetRSBackbone(_HubPyramidBackbone):
    """ResNet-RS-``depth`` (the paper's convolutional baseline) as a keras-hub backbone: the
    zoo's [`ResNetRSBackbone`][lambda_keras.zoo.pyramid_backbone.ResNetRSBackbone] inside.

    Args:
        depth: 50, 101, 152, 200, 270, 350 or 420.
        se: Squeeze-and-excitation in every block (ResNet-RS).
        image_shape, batch_norm, stochastic_depth_rate, width_multiplier, dtype, **kwargs: As
            [`LambdaResNetBackbone`][lambda_keras.hub.backbones.LambdaResNetBackbone].
        weights: None, ``"imagenet"`` (timm's ``resnetrs<depth>.tf_in1k`` without its head,
            through the weights registry) or a ``.weights.h5`` file of the zoo's backbone.

    Call: images ``[batch, height, width, 3]`` -> P5 ``[batch, height / 32, width / 32,
    2048 * width_multiplier]``; ``pyramid_outputs``: P2...P5.
    """

    BODY = pyramid_backbone.ResNetRSBackbone

    def __init__(
        self,
        depth: int = 50,
        se: bool = True,
        image_shape: tuple[int | None, int | None, int] = (None, None, 3),
        weights: str | None = None,
        batch_norm: str = "standard",
        stochastic_depth_rate: float = 0.0,
        width_multiplier: float = 1.0,
        dtype=None,
        **kwargs,
    ):
        options = {
            "depth": pyramid_backbone.check_depth(depth),  # an int in the configuration
            "se": se,
            "batch_norm": batch_norm,
            "stochastic_depth_rate": stochastic_depth_rate,
            "width_multiplier": width_multiplier,
        }
        super().__init__(
            image_shape=image_shape, weights=weights, body_options=options, dtype=dtype, **kwargs
        )


@keras.saving.register_keras_serializable(package="lambda_keras.hub")
class TimmLambdaResNetBackbone(_HubPyramidBackbone):
    """One of timm's ImageNet LambdaResNets as a keras-hub backbone: the zoo's
    [`TimmLambdaResNetBackbone`][lambda_keras.zoo.pyramid_backbone.TimmLambdaResNetBackbone]
    inside. Its presets (`lambda_resnet26t_imagenet`, ...) carry timm's ImageNet weights
    ([`presets`][lambda_keras.hub.presets]).

    Args:
        model: ``"lambda_resnet26t"``, ``"lambda_resnet26rpt_256"`` or ``"lambda_resnet50ts"``.
        image_shape: ``(height, width, 3)``; height and width multiples of 32 or None. None
            (the default): ``(None, None, 3)``, and ``(256, 256, 3)`` for
            ``lambda_resnet26rpt_256`` (its relative position embeddings' size).
        weights: None, ``"imagenet"`` or a ``.weights.h5`` file of the zoo's backbone, loaded
            into the body (a preset's weights come from the preset).
        batch_norm: ``"standard"``, ``"synchronized"`` or ``"frozen"``.
        implementation: The lambda layers' implementation (``"conv"``: linear memory).
        dtype, **kwargs: As
            [`LambdaResNetBackbone`][lambda_keras.hub.backbones.LambdaResNetBackbone].

    Call: images ``[batch, height, width, 3]`` -> P5 ``[batch, height / 32, width / 32,
    2048]``; ``pyramid_outputs``: P2...P5.
    """

    BODY = pyramid_backbone.TimmLambdaResNetBackbone

    def __init__(
        self,
        model: str = "lambda_resnet50ts",
        image_shape: tuple[int | None, int | None, int] | None = None,
        weights: str | None = None,
        batch_norm: str = "standard",
        implementation: str = "conv",
        dtype=None,
        **kwargs,
    ):
        if image_shape is None:
            image_shape = self.BODY.default_input_shape(model)
        options = {"model": model, "batch_norm": batch_norm, "implementation": implementation}
        super().__init__(
            image_shape=image_shape, weights=weights, body_options=options, dtype=dtype, **kwargs
        )
