"""Convert timm checkpoints (its LambdaResNets and ResNet-RS) to Keras ``.weights.h5`` files.

::

    python -m lambda_keras.zoo.convert_timm --model=lambda_resnet26t \\
        --checkpoint=model.safetensors --output=lambda_resnet26t.weights.h5

after which ``lambda_keras.zoo.LambdaResNet26T(weights="lambda_resnet26t.weights.h5")`` is the
converted model; likewise ``--model=resnet_rs50`` (or timm's name, ``resnetrs50``) ...
``resnet_rs420`` for ``lambda_keras.zoo.ResNetRS50`` ... (SE on). ``.safetensors`` files are
read with the ``safetensors`` package into NumPy (``pip install "lambda-keras[timm]"``, no PyTorch);
``pytorch_model.bin`` / ``.pth`` files are read without PyTorch too
([lambda_keras.checkpoints][lambda_keras.checkpoints]).

The conversion is strict: every tensor of the checkpoint is used exactly once and every weight
of the Keras model is set exactly once. A checkpoint of another model, a missing or unexpected
tensor or a shape mismatch is a ``ValueError`` naming the tensor, and nothing is written.

How timm's tensors map: [`lambda_keras.zoo.timm_checkpoint`][lambda_keras.zoo.timm_checkpoint].
"""

from __future__ import annotations

import os

import keras
import numpy as np

from lambda_keras import converter_cli
from lambda_keras.checkpoints import read_checkpoint
from lambda_keras.zoo import resnet_rs, timm_checkpoint, timm_lambda_resnet
from lambda_keras.zoo import weights as weights_lib
from lambda_keras.zoo.registry import model_builder

__all__ = [
    "MODELS",
    "TIMM_NAMES",
    "assign_checkpoint",
    "convert",
    "keras_weights",
    "read_checkpoint",
]

LAMBDA_RESNETS = tuple(timm_lambda_resnet.SPECS)
RESNET_RS = tuple(f"resnet_rs{depth}" for depth in resnet_rs.TIMM_WEIGHTS)
MODELS = LAMBDA_RESNETS + RESNET_RS
"""The `--model` values of the converter: timm's LambdaResNets and ResNet-RS models."""
TIMM_NAMES = {f"resnetrs{depth}": f"resnet_rs{depth}" for depth in resnet_rs.TIMM_WEIGHTS}
"""timm's own names where the zoo's differ: `--model=resnetrs50` is `resnet_rs50`."""


def _family(model_name: str) -> str:
    if model_name not in MODELS:
        raise ValueError(f"`model_name` must be one of {MODELS}; received {model_name!r}.")
    return weights_lib.timm_family(model_name)


def keras_weights(state: dict[str, np.ndarray], model_name: str) -> dict[str, np.ndarray]:
    """timm state dict of ``model_name`` -> ``{keras weight path: array}``
    ([`lambda_keras.zoo.timm_checkpoint.keras_weights`][lambda_keras.zoo.timm_checkpoint.keras_weights])."""
    return timm_checkpoint.keras_weights(state, _family(model_name))


def assign_checkpoint(model: keras.Model, state: dict[str, np.ndarray], model_name: str) -> None:
    """Set every weight of ``model`` (a timm port built as ``model_name``) from ``state``
    ([`lambda_keras.zoo.timm_checkpoint.assign_checkpoint`][lambda_keras.zoo.timm_checkpoint.assign_checkpoint]:
    strict, names the tensor)."""
    timm_checkpoint.assign_checkpoint(model, state, _family(model_name), model_name)


def convert(model_name: str, checkpoint: str | os.PathLike, output: str | os.PathLike) -> str:
    """Convert ``checkpoint`` (timm's ``model_name``) to the Keras weights file ``output``.

    Args:
        model_name: The zoo's name ([`MODELS`][lambda_keras.zoo.convert_timm.MODELS]) or timm's
            (``resnetrs50``, [`TIMM_NAMES`][lambda_keras.zoo.convert_timm.TIMM_NAMES]).

    Returns:
        ``output``. Written only when the whole checkpoint converted (atomically).
    """
    model_name = TIMM_NAMES.get(model_name, model_name)
    if model_name not in MODELS:
        raise ValueError(f"`model` must be one of {', '.join(MODELS)}; received {model_name!r}.")
    output = os.fspath(output)
    if not output.endswith(".weights.h5"):
        raise ValueError(f"`output` must end in .weights.h5; received {output!r}.")
    state = read_checkpoint(checkpoint)
    bias = state.get("head.fc.bias", state.get("fc.bias"))
    classes = 1000 if bias is None else int(bias.shape[0])
    if model_name in RESNET_RS:
        size = resnet_rs.TIMM_WEIGHTS[int(model_name.removeprefix("resnet_rs"))].test_size
    else:
        size = timm_lambda_resnet.SPECS[model_name].image_size
    model = model_builder(model_name)(weights=None, classes=classes, input_shape=(size, size, 3))
    assign_checkpoint(model, state, model_name)
    weights_lib.save_weights_atomically(model, output)
    return output


def define_flags(flag_values=None):
    """The command line's flags on ``flag_values`` (absl's global ``FLAGS`` by default)."""
    return converter_cli.define_flags(
        flag_values,
        [*MODELS, *TIMM_NAMES],
        "The checkpoint's model: the zoo's name or timm's (resnetrs50 ... resnetrs420 are "
        "resnet_rs50 ... resnet_rs420).",
        "timm checkpoint (.safetensors, .bin or .pth).",
    )


def main(argv) -> None:
    del argv
    converter_cli.run(convert, "convert_timm")


if __name__ == "__main__":
    from absl import app

    define_flags()
    app.run(main)
