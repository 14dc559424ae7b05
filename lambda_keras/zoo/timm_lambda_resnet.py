"""Keras ports of timm's ImageNet LambdaResNets: ``lambda_resnet26t``, ``lambda_resnet26rpt_256``
and ``lambda_resnet50ts`` (Wightman, pytorch-image-models, ``timm/models/byoanet.py``).

No official LambdaResNet checkpoint was released; these three timm models are the only public
ImageNet-trained LambdaResNets. They differ from the paper's LambdaResNets (``lambda_resnet.py``)
and the architecture here follows timm exactly, so that timm's weights give timm's logits:

* a "tiered" stem: 3x3/2 (24), 3x3 (32), 3x3 (64) convolutions, each with batch norm and the
  activation, then a 3x3/2 max-pool (padding 1);
* bottleneck blocks (1x1, 3x3, 1x1 with 4x expansion) whose projection shortcut is a strided
  1x1 conv; stride on the 3x3;
* lambda blocks whose 3x3 is a lambda layer (|k|=16, |h|=4, |u|=1) with timm's lambda
  convolution bias (``use_position_bias``), followed by a 2x2 average pool when the block
  downsamples, then batch norm and the activation;
* position lambdas from a local 9x9 scope (``26t``, ``50ts``) or from relative position
  embeddings over the whole map (``26rpt_256``: global context, sized to a 256x256 input);
* ReLU (``26t``, ``26rpt``) or SiLU (``50ts``); global average pooling and a linear classifier.

``weights="imagenet"`` is registered for each: timm's ``model.safetensors`` from the Hugging Face
Hub, checked by the strongest rule that can be cited for it
([lambda_keras.zoo.integrity][lambda_keras.zoo.integrity]), converted
([lambda_keras.zoo.timm_checkpoint][lambda_keras.zoo.timm_checkpoint]) and cached once.
The images these weights expect:
``preprocess_input`` (ImageNet mean/std) after the evaluation resize and crop of ``eval_image``
(bicubic, shorter side to ``size / crop_fraction``, centre crop).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import keras
import numpy as np

from lambda_keras.zoo import applications
from lambda_keras.zoo import weights as weights_lib
from lambda_keras.zoo.registry import register_model
from lambda_keras.zoo.resnet_blocks import (
    LambdaConfig,
    NormConfig,
    PaddedMaxPooling2D,
    bottleneck,
    conv_bn_act,
)
from lambda_keras.zoo.timm_checkpoint import TIMM_HUB

__all__ = [
    "SPECS",
    "LambdaResNet26RPT256",
    "LambdaResNet26T",
    "LambdaResNet50TS",
    "TimmLambdaResNetSpec",
    "TimmStage",
    "build",
    "decode_predictions",
    "eval_image",
    "preprocess_input",
]

preprocess_input = applications.preprocess_input
decode_predictions = applications.decode_predictions


@dataclasses.dataclass(frozen=True)
class TimmStage:
    """One stage: ``blocks`` bottlenecks of ``channels`` outputs (width ``channels / 4``); the
    first has ``stride``; ``lambda_blocks`` (1-based) hold a lambda layer instead of the 3x3."""

    channels: int
    stride: int
    blocks: int
    lambda_blocks: tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class TimmLambdaResNetSpec:
    """A timm LambdaResNet, its published weights and how they were evaluated.

    Attributes:
        name: Registry name, timm's model name.
        title: Human-readable name.
        activation: ``"relu"`` or ``"silu"``.
        stages: The four stages c2...c5.
        scope_size: Local scope of the position lambdas, or None for relative position
            embeddings over the whole (fixed-size) map.
        image_size: Train and evaluation size of the weights (256).
        crop_fraction: timm's evaluation ``crop_pct``.
        fixed_input_size: The weights only fit ``image_size`` inputs (relative embeddings).
        hub_id: The weights on the Hugging Face Hub (``timm/<model>.<tag>``); their pin and
            metrics are registered
            ([registered_weights][lambda_keras.zoo.weights.registered_weights]).
        parameters: timm's parameter count.
    """

    name: str
    title: str
    activation: str
    stages: tuple[TimmStage, ...]
    scope_size: int | None
    image_size: int
    crop_fraction: float
    fixed_input_size: bool
    hub_id: str
    parameters: int

    @property
    def weights_name(self) -> str:
        """The registered weights' name (timm's ``model.tag``)."""
        return self.hub_id.split("/", 1)[1]


def _stages(*stages: tuple[int, int, int, tuple[int, ...]]) -> tuple[TimmStage, ...]:
    return tuple(TimmStage(*stage) for stage in stages)


# timm's ``model_cfgs`` for the three models (``interleave_blocks`` spelled out).
_26_STAGES = _stages((256, 1, 2, ()), (512, 2, 2, ()), (1024, 2, 2, (2,)), (2048, 2, 2, (1, 2)))
SPECS: dict[str, TimmLambdaResNetSpec] = {
    spec.name: spec
    for spec in (
        TimmLambdaResNetSpec(
            name="lambda_resnet26t",
            title="LambdaResNet-26-T (timm)",
            activation="relu",
            stages=_26_STAGES,
            scope_size=9,
            image_size=256,
            crop_fraction=0.94,
            fixed_input_size=False,
            hub_id="timm/lambda_resnet26t.c1_in1k",
            parameters=10_958_272,
        ),
        TimmLambdaResNetSpec(
            name="lambda_resnet26rpt_256",
            title="LambdaResNet-26-RPT-256 (timm)",
            activation="relu",
            stages=_26_STAGES,
            scope_size=None,
            image_size=256,
            crop_fraction=0.94,
            fixed_input_size=True,
            hub_id="timm/lambda_resnet26rpt_256.c1_in1k",
            parameters=10_988_688,
        ),
        TimmLambdaResNetSpec(
            name="lambda_resnet50ts",
            title="LambdaResNet-50-TS (timm)",
            activation="silu",
            stages=_stages(
                (256, 1, 3, ()), (512, 2, 4, (4,)), (1024, 2, 6, (2, 4, 6)), (2048, 2, 3, (2,))
            ),
            scope_size=9,
            image_size=256,
            crop_fraction=0.95,
            fixed_input_size=False,
            hub_id="timm/lambda_resnet50ts.a1h_in1k",
            parameters=21_536_832,
        ),
    )
}
"""timm's three ImageNet LambdaResNets by name: their stages, lambda placements and weights."""


# How each file is checked (lambda_keras.zoo.integrity), where its digest or commit was read,
# and timm's top-1 / top-5 (%) (timm_checkpoint.TIMM_RESULTS).
_PINS = {
    "lambda_resnet26t": dict(
        integrity="hub_commit",
        revision="5ed46e4",  # "transformers tag": main when read, the file from "Add model"
        source=f"{TIMM_HUB}/lambda_resnet26t.c1_in1k/tree/main",
        imagenet_top=(79.126, 94.554),
    ),
    "lambda_resnet26rpt_256": dict(
        integrity="hub_latest",  # no commit of this repository could be cited
        revision="main",
        source=f"{TIMM_HUB}/lambda_resnet26rpt_256.c1_in1k",
        imagenet_top=(78.960, 94.420),
    ),
    "lambda_resnet50ts": dict(
        integrity="sha256",
        sha256="bcb80eaa77910c72c9c0ff9e83f99d550270fc23ab0ccac69d01e35cb269cdf8",
        revision="d1104e080d2725a19db5ec2ec58f589c490d674b",  # "Add model"
        source=f"{TIMM_HUB}/lambda_resnet50ts.a1h_in1k/blob/main/model.safetensors",
        imagenet_top=(81.184, 95.094),
    ),
}

for _spec in SPECS.values():
    weights_lib.register_timm_weights(
        architecture=_spec.name,
        family="byobnet",
        hub_id=_spec.hub_id,
        input_size=_spec.image_size,
        crop_fraction=_spec.crop_fraction,
        **_PINS[_spec.name],
    )


def eval_image(image, spec_or_name: TimmLambdaResNetSpec | str):
    """timm's evaluation transform for the model's weights, before ``preprocess_input``.

    Bicubic (antialiased) resize of the shorter side to ``image_size / crop_fraction``, centre
    crop to ``image_size``, float32 in ``[0, 255]``.

    Args:
        image: ``[height, width, 3]`` uint8 or float image.
        spec_or_name: The model's spec or registry name.

    This is the serving graph's preprocessing (TensorFlow's antialiased bicubic resize), so a
    photo gets exactly the pixels the exported SavedModel sees; it needs TensorFlow installed
    (``tensorflow-cpu`` is enough) whichever Keras backend runs the model.

    Returns:
        ``[image_size, image_size, 3]`` float32 NumPy array.
    """
    spec = SPECS[spec_or_name] if isinstance(spec_or_name, str) else spec_or_name
    try:
        from lambda_keras import preprocessing
    except ImportError as error:  # pragma: no cover - TensorFlow is in every install extra
        raise ImportError(
            "eval_image uses TensorFlow's image resize (the serving graph's preprocessing); "
            "install tensorflow-cpu (pip install 'lambda-keras[cpu]')."
        ) from error
    return np.array(preprocessing.eval_image(image, spec.image_size, spec.crop_fraction))


def timm_lambda_resnet_body(
    spec: TimmLambdaResNetSpec, implementation: str
) -> Callable[[keras.KerasTensor], keras.KerasTensor]:
    """Image ``[b, h, w, 3]`` -> final features ``[b, h/32, w/32, 2048]`` (``"features"``)."""
    norm = NormConfig(momentum=0.9, epsilon=1e-5)  # PyTorch's BN momentum 0.1, eps 1e-5
    lambda_config = LambdaConfig(
        key_dim=16,
        num_heads=4,
        intra_depth=1,
        scope_size=spec.scope_size,
        implementation=implementation,
        use_position_bias=spec.scope_size is not None,  # timm's Conv3d has a bias
    )
    act = spec.activation

    def body(x):
        x = conv_bn_act(x, 24, 3, 2, norm, "stem_1", act)
        x = conv_bn_act(x, 32, 3, 1, norm, "stem_2", act)
        x = conv_bn_act(x, 64, 3, 1, norm, "stem_3", act)
        x = PaddedMaxPooling2D(3, strides=2, padding=1, name="stem_pool")(x)
        for s, stage in enumerate(spec.stages):
            for block in range(1, stage.blocks + 1):
                last = s == len(spec.stages) - 1 and block == stage.blocks
                x = bottleneck(
                    x,
                    stage.channels // 4,
                    strides=stage.stride if block == 1 else 1,
                    use_lambda=block in stage.lambda_blocks,
                    lambda_config=lambda_config,
                    norm=norm,
                    resnet_d_shortcut=False,
                    activation=act,
                    lambda_pool_size=2,
                    name=f"c{s + 2}_block{block}",
                    output_name="features" if last else None,
                )
        return x

    return body


_DOC = """
        implementation: How the lambda layers compute position lambdas (``"auto"``, ``"einsum"``,
            ``"conv"``, ``"depthwise"``); all give the same outputs."""


def build(model_name: str, *, implementation: str, **application_args) -> keras.Model:
    """What every timm port's builder does, with its own arguments: the model registered as
    ``model_name`` (a key of ``SPECS``) with ``keras.applications``' arguments."""
    spec = SPECS[model_name]
    app = applications.ApplicationArgs(**application_args)
    if spec.fixed_input_size:
        _check_fixed_input(spec, app)
    _check_lambda_downsampling(spec, app)
    return applications.build(
        app,
        architecture=spec.name,
        body=timm_lambda_resnet_body(spec, implementation),
        dropout_rate=0.0,
        default_size=spec.image_size,
        min_size=32,
    )


def _given_input_shape(app: applications.ApplicationArgs) -> tuple | None:
    """The ``input_shape`` given, else the input tensor's, else None (the default size)."""
    if app.input_shape is None and app.input_tensor is not None:
        return tuple(app.input_tensor.shape[1:])
    return app.input_shape


def _check_fixed_input(spec: TimmLambdaResNetSpec, app: applications.ApplicationArgs) -> None:
    """Relative position embeddings are sized to the map: the input size must be static, and
    the ImageNet weights' (256x256)."""
    shape = _given_input_shape(app)
    if shape is None:
        return  # the default, spec.image_size
    size = spec.image_size
    if len(shape) == 3 and (shape[0] is None or shape[1] is None):
        raise ValueError(
            f"{spec.name!r} has relative position embeddings sized to its input: `input_shape` "
            f"must have a known height and width (the weights need ({size}, {size}, 3)); "
            f"received input_shape={tuple(shape)}."
        )
    if app.weights is not None and tuple(shape[:2]) != (size, size):
        raise ValueError(
            f"The weights of {spec.name!r} fit {size}x{size} inputs only (relative position "
            f"embeddings); received input_shape={tuple(shape)}."
        )


def _check_lambda_downsampling(spec: TimmLambdaResNetSpec, app: applications.ApplicationArgs):
    """A stage whose first, strided block is a lambda block halves its map with a 2x2 average
    pool (floor) and its shortcut with a strided 1x1 convolution (ceil): an odd side there makes
    the two differ by one, and the addition fails, as in timm (``lambda_resnet26t`` on a 100 x
    100 image). A ``ValueError`` naming ``input_shape`` before any layer is made; unknown sides
    are not checked."""
    shape = _given_input_shape(app)
    if shape is None or len(shape) != 3 or not all(isinstance(s, int) for s in shape[:2]):
        return
    sides = [math.ceil(math.ceil(side / 2) / 2) for side in shape[:2]]  # the stem's conv, pool
    for index, stage in enumerate(spec.stages):
        if stage.stride == 2 and 1 in stage.lambda_blocks and any(s % 2 for s in sides):
            raise ValueError(
                f"{spec.name!r} halves the c{index + 2} map with a lambda block, whose 2x2 "
                f"average pool and strided shortcut need even sides there: input_shape="
                f"{tuple(shape)} gives a {sides[0]}x{sides[1]} map (as timm's model, it would "
                "fail at the addition). Heights and widths that are multiples of 32 always "
                f"work (the weights' {spec.image_size})."
            )
        if stage.stride == 2:
            sides = [math.ceil(side / 2) for side in sides]


def _timm_model(name: str) -> Callable:
    spec = SPECS[name]
    doc = applications.APPLICATION_ARGS_DOC.replace(
        "default ``(224, 224, 3)``", f"default ``({spec.image_size}, {spec.image_size}, 3)``"
    )
    return register_model(name, spec=spec, doc=doc + _DOC + applications.RETURNS_DOC)


@_timm_model("lambda_resnet26t")
def LambdaResNet26T(
    include_top: bool = True,
    weights: str | None = None,
    input_tensor: keras.KerasTensor | None = None,
    input_shape: tuple[int | None, int | None, int] | None = None,
    pooling: str | None = None,
    classes: int = 1000,
    classifier_activation: str | Callable | None = "softmax",
    name: str | None = None,
    *,
    implementation: str = "auto",
) -> keras.Model:
    """Instantiates timm's ``lambda_resnet26t``: 26 layers, tiered stem, ReLU, lambda layers
    with a 9x9 scope in the last block of c4 and both blocks of c5.

    ``weights="imagenet"``: timm's ``lambda_resnet26t.c1_in1k`` at 256x256 (its metrics and file:
    ``registered_weights("lambda_resnet26t")``).

    Examples:
        ```python
        import lambda_keras

        # downloaded and checked once
        model = lambda_keras.zoo.LambdaResNet26T(weights="imagenet")
        ```
    """
    return build("lambda_resnet26t", **locals())


@_timm_model("lambda_resnet26rpt_256")
def LambdaResNet26RPT256(
    include_top: bool = True,
    weights: str | None = None,
    input_tensor: keras.KerasTensor | None = None,
    input_shape: tuple[int | None, int | None, int] | None = None,
    pooling: str | None = None,
    classes: int = 1000,
    classifier_activation: str | Callable | None = "softmax",
    name: str | None = None,
    *,
    implementation: str = "auto",
) -> keras.Model:
    """Instantiates timm's ``lambda_resnet26rpt_256``: ``lambda_resnet26t`` with relative
    position embeddings over the whole map (global context) instead of a local scope.

    The embeddings are sized to the input, so the input size is fixed when the model is built;
    the weights fit 256x256. ``weights="imagenet"``: timm's ``lambda_resnet26rpt_256.c1_in1k``
    (its metrics and file: ``registered_weights("lambda_resnet26rpt_256")``).
    """
    return build("lambda_resnet26rpt_256", **locals())


@_timm_model("lambda_resnet50ts")
def LambdaResNet50TS(
    include_top: bool = True,
    weights: str | None = None,
    input_tensor: keras.KerasTensor | None = None,
    input_shape: tuple[int | None, int | None, int] | None = None,
    pooling: str | None = None,
    classes: int = 1000,
    classifier_activation: str | Callable | None = "softmax",
    name: str | None = None,
    *,
    implementation: str = "auto",
) -> keras.Model:
    """Instantiates timm's ``lambda_resnet50ts``: 50 layers, tiered stem, SiLU, lambda layers
    with a 9x9 scope in the last block of c3, every second block of c4 and the middle block
    of c5.

    ``weights="imagenet"``: timm's ``lambda_resnet50ts.a1h_in1k`` at 256x256 (its metrics and file:
    ``registered_weights("lambda_resnet50ts")``).

    Examples:
        ```python
        import lambda_keras

        # downloaded and checked once
        model = lambda_keras.zoo.LambdaResNet50TS(weights="imagenet")
        ```
    """
    return build("lambda_resnet50ts", **locals())
