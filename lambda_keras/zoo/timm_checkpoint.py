"""timm checkpoints -> Keras weights: the pure tensor mapping, with no model module imported.

Two of timm's model classes are ported
([`lambda_keras.zoo.timm_lambda_resnet`][lambda_keras.zoo.timm_lambda_resnet],
[`lambda_keras.zoo.resnet_rs`][lambda_keras.zoo.resnet_rs]); a checkpoint's *family* names the class
whose module names it holds:

* ``"byobnet"``: timm's ``ByobNet`` LambdaResNets (``lambda_resnet26t`` ...);
* ``"resnet"``: timm's ``ResNet`` with a deep stem, average-pool shortcuts and SE (``resnetrs*``).

Which family a zoo architecture is, is recorded where its weights are registered
([`lambda_keras.zoo.weights.register_timm_weights`][lambda_keras.zoo.weights.register_timm_weights]).
The command line is ``lambda_keras.zoo.convert_timm``.

How timm's tensors map (PyTorch is channels first, Keras channels last):

* ``Conv2d`` weight ``[out, in, kh, kw]`` -> ``Conv2D`` kernel ``[kh, kw, in, out]``;
* ``BatchNorm2d`` ``weight``, ``bias``, ``running_mean``, ``running_var`` -> ``gamma``,
  ``beta``, ``moving_mean``, ``moving_variance`` (PyTorch's momentum 0.1 is Keras'
  ``momentum=0.9``; both use ``epsilon=1e-5``); ``num_batches_tracked`` has no Keras
  counterpart and is dropped;
* the lambda layer's ``qkv`` 1x1 conv ``[q + k + v, in, 1, 1]`` -> ``qkv_kernel``
  ``[in, q + k + v]`` (same column order: queries head-major, keys, values); ``norm_q`` /
  ``norm_v`` -> ``query_norm`` / ``value_norm``; the lambda convolution ``Conv3d`` weight
  ``[k, 1, r, r, 1]`` -> relative embeddings ``[r, r, 1, k, 1]`` and its bias ``[k]`` ->
  ``position_bias`` ``[1, k]``; ``pos_emb`` ``[2H-1, 2W-1, k]`` -> ``[2H-1, 2W-1, 1, k, 1]``
  (both index offsets the same way, ``i - size // 2``);
* the classifier ``Linear`` ``[classes, in]`` -> ``Dense`` kernel ``[in, classes]``;
* ResNet-RS (timm's ``ResNet`` with a deep stem, average-pool shortcuts and SE): the stem
  ``conv1.{0,3,6}`` / ``bn1`` and the max-pool's replacement ``maxpool.{0,1}`` -> ``stem_1`` ...
  ``stem_4``; ``layer{i}.{j}.conv{k}``/``bn{k}`` -> ``c{i+1}_block{j+1}_{k}_conv``/``_bn``;
  ``se.fc1``/``se.fc2`` (1x1 convs with bias) -> ``_se_reduce``/``_se_expand``;
  ``downsample.{1,2}`` -> ``_shortcut_conv``/``_shortcut_bn``; ``fc`` -> ``predictions``.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import keras
import numpy as np

__all__ = ["FAMILIES", "TIMM_HUB", "TIMM_RESULTS", "assign_checkpoint", "keras_weights"]

FAMILIES = ("byobnet", "resnet")
"""The timm model families whose state dicts the converter reads (`byobnet` for the
LambdaResNets, `resnet` for ResNet-RS)."""
TIMM_HUB = "https://huggingface.co/timm"
"""Where timm's checkpoints are (the Hugging Face Hub's ``timm`` organisation)."""
TIMM_RESULTS = (
    "https://github.com/huggingface/pytorch-image-models/blob/"
    "4e5207c7bb6592474ca56e28b2cf85be8f1a550f/results/results-imagenet.csv"
)
"""timm's own ImageNet evaluation of its checkpoints (top-1 / top-5 at each weight's test size
and crop, bicubic): the source of the registered metrics of timm's files."""

_BN = {"weight": "gamma", "bias": "beta", "running_mean": "moving_mean"}
_BN["running_var"] = "moving_variance"
# timm's module inside a block -> the Keras layer (suffix of the block's name).
_BLOCK_MODULES = {
    "shortcut.conv": "shortcut_conv",
    "shortcut.bn": "shortcut_bn",
    "conv1_1x1.conv": "1_conv",
    "conv1_1x1.bn": "1_bn",
    "conv2_kxk.conv": "2_conv",
    "conv2_kxk.bn": "2_bn",
    "post_attn": "2_bn",
    "conv3_1x1.conv": "3_conv",
    "conv3_1x1.bn": "3_bn",
    "self_attn.norm_q": "2_lambda/query_norm",
    "self_attn.norm_v": "2_lambda/value_norm",
}


def _conv_kernel(w):
    return np.transpose(w, (2, 3, 1, 0))


def _same(w):
    return w


# Lambda-layer tensors: timm's name -> (Keras weight under the block's ``_2_lambda``, transform).
_LAMBDA_TENSORS: dict[str, tuple[str, Callable]] = {
    "self_attn.qkv.weight": ("qkv_kernel", lambda w: w[:, :, 0, 0].T),
    "self_attn.conv_lambda.weight": (
        "position_embedding/embeddings",
        lambda w: np.transpose(w[:, 0, :, :, 0], (1, 2, 0))[:, :, None, :, None],
    ),
    "self_attn.conv_lambda.bias": ("position_bias", lambda w: w[None, :]),
    "self_attn.pos_emb": ("position_embedding/embeddings", lambda w: w[:, :, None, :, None]),
}


def _classifier(tensor: str) -> tuple[str, Callable]:
    if tensor == "weight":
        return "predictions/kernel", lambda w: w.T
    return "predictions/bias", _same


def _lambda_resnet_target(key: str) -> tuple[str, Callable]:
    """The Keras weight of tensor ``key`` of timm's LambdaResNets (``ByobNet``)."""
    if key in ("head.fc.weight", "head.fc.bias"):
        return _classifier(key.rpartition(".")[2])
    stem = re.fullmatch(r"stem\.conv(\d)\.(conv|bn)\.(\w+)", key)
    if stem:
        return _layer_weight(f"stem_{stem[1]}_{stem[2]}", stem[3])
    block = re.fullmatch(r"stages\.(\d+)\.(\d+)\.(.+)", key)
    if block:
        name = f"c{int(block[1]) + 2}_block{int(block[2]) + 1}"
        rest = block[3]
        if rest in _LAMBDA_TENSORS:
            path, transform = _LAMBDA_TENSORS[rest]
            return f"{name}_2_lambda/{path}", transform
        module, _, tensor = rest.rpartition(".")
        if module in _BLOCK_MODULES:
            return _layer_weight(f"{name}_{_BLOCK_MODULES[module]}", tensor)
    raise ValueError(f"Unexpected tensor {key!r}: not a tensor of timm's LambdaResNets.")


# timm's ResNet-RS stem: module -> Keras layer.
_RS_STEM = {
    "conv1.0": "stem_1_conv",
    "conv1.1": "stem_1_bn",
    "conv1.3": "stem_2_conv",
    "conv1.4": "stem_2_bn",
    "conv1.6": "stem_3_conv",
    "bn1": "stem_3_bn",
    "maxpool.0": "stem_4_conv",
    "maxpool.1": "stem_4_bn",
}
_RS_BLOCK = {"downsample.1": "shortcut_conv", "downsample.2": "shortcut_bn"}
_RS_BLOCK.update({f"conv{k}": f"{k}_conv" for k in (1, 2, 3)})
_RS_BLOCK.update({f"bn{k}": f"{k}_bn" for k in (1, 2, 3)})


def _resnet_rs_target(key: str) -> tuple[str, Callable]:
    """The Keras weight of tensor ``key`` of timm's ``resnetrs*`` (``ResNet``)."""
    module, _, tensor = key.rpartition(".")
    if module == "fc" and tensor in ("weight", "bias"):
        return _classifier(tensor)
    if module in _RS_STEM:
        return _layer_weight(_RS_STEM[module], tensor)
    block = re.fullmatch(r"layer(\d)\.(\d+)\.(.+)", module)
    if block:
        name = f"c{int(block[1]) + 1}_block{int(block[2]) + 1}"
        if block[3] in ("se.fc1", "se.fc2"):
            layer = f"{name}_se_{'reduce' if block[3] == 'se.fc1' else 'expand'}"
            if tensor == "weight":
                return f"{layer}/kernel", _conv_kernel
            if tensor == "bias":
                return f"{layer}/bias", _same
        elif block[3] in _RS_BLOCK:
            return _layer_weight(f"{name}_{_RS_BLOCK[block[3]]}", tensor)
    raise ValueError(f"Unexpected tensor {key!r}: not a tensor of timm's ResNet-RS.")


def _layer_weight(layer: str, tensor: str) -> tuple[str, Callable]:
    if layer.endswith("_conv") and tensor == "weight":
        return f"{layer}/kernel", _conv_kernel
    if tensor in _BN and not layer.endswith("_conv"):
        return f"{layer}/{_BN[tensor]}", _same
    raise ValueError(f"Unexpected tensor {tensor!r} of {layer!r}.")


def keras_weights(state: dict[str, np.ndarray], family: str) -> dict[str, np.ndarray]:
    """timm state dict of a model of ``family`` -> ``{keras weight path: array}``; every tensor
    used once (``num_batches_tracked`` has no Keras counterpart and is dropped)."""
    target = _family_target(family)
    converted: dict[str, np.ndarray] = {}
    sources: dict[str, str] = {}
    for key in sorted(state):
        if key.endswith(".num_batches_tracked"):
            continue
        path, transform = target(key)
        if path in converted:
            raise ValueError(f"Tensors {sources[path]!r} and {key!r} both map to {path!r}.")
        converted[path] = np.asarray(transform(np.asarray(state[key])), dtype="float32")
        sources[path] = key
    return converted


def assign_checkpoint(
    model: keras.Model, state: dict[str, np.ndarray], family: str, model_name: str
) -> None:
    """Set every weight of ``model`` (a timm port of ``family``, built as ``model_name``) from
    ``state``.

    Raises:
        ValueError: a tensor of ``state`` has no place in the model, a weight of the model has
            no tensor, or shapes differ; the message names the tensor. Nothing is assigned then.
    """
    converted = keras_weights(state, family)
    variables = {w.path: w for w in model.weights}
    missing = sorted(set(variables) - set(converted))
    unexpected = sorted(set(converted) - set(variables))
    if missing or unexpected:
        raise ValueError(
            f"The checkpoint does not hold timm's {model_name!r}: "
            f"{len(missing)} weight(s) of the Keras model have no tensor "
            f"(first: {missing[:3]}), {len(unexpected)} tensor(s) have no place in it "
            f"(first: {unexpected[:3]})."
        )
    for path, value in converted.items():
        expected = tuple(variables[path].shape)
        if value.shape != expected:
            raise ValueError(
                f"Shape mismatch for {path!r}: the checkpoint's tensor gives {value.shape}, "
                f"{model_name!r} has {expected} (another model or number of classes?)."
            )
    for path, value in converted.items():
        variables[path].assign(value)


def _family_target(family: str) -> Callable[[str], tuple[str, Callable]]:
    if family == "byobnet":
        return _lambda_resnet_target
    if family == "resnet":
        return _resnet_rs_target
    raise ValueError(f"`family` must be one of {FAMILIES}; received {family!r}.")
