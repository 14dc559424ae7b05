"""torchvision's ``maskrcnn_resnet50_fpn`` and ``maskrcnn_resnet50_fpn_v2`` checkpoints -> the
Keras model's weights: the tensor mapping, strict (every tensor used once, every weight set once,
shapes equal).

How torchvision's tensors map (PyTorch is channels first, boxes ``(x1, y1, x2, y2)``; the
project is channels last, boxes ``(y1, x1, y2, x2)``):

* ``backbone.body.<module>`` -> the backbone layer ``<module>`` with ``_`` for ``.``
  ([resnet][lambda_keras.detection.torchvision.resnet]); ``Conv2d`` ``[out, in, kh, kw]`` ->
  ``[kh, kw, in, out]``; batch norm ``weight``, ``bias``, ``running_mean``, ``running_var`` ->
  ``gamma``, ``beta``, ``moving_mean``, ``moving_variance`` (``num_batches_tracked`` is
  dropped);
* ``backbone.fpn.inner_blocks.i`` / ``layer_blocks.i`` -> ``fpn`` ``lateral_P{i+2}`` /
  ``output_P{i+2}`` (``.0`` the convolution; in v2 ``.1`` its batch norm, ``lateral_norm_P*`` /
  ``output_norm_P*``); ``rpn.head.conv.j.0`` / ``cls_logits`` / ``bbox_pred`` -> ``rpn_head``
  ``conv`` (``conv2`` for v2's second) / ``objectness`` / ``deltas``;
* v1's ``roi_heads.box_head.fc6`` / ``fc7`` -> ``box_head`` ``fc1`` / ``fc2``; v2's
  ``box_head.0`` ... ``3`` (convolution ``.0``, batch norm ``.1``) -> ``conv1`` ... ``conv4``
  and ``norm1`` ... ``norm4``, and ``box_head.5`` -> ``fc1``; the first linear layer's inputs
  are reordered from ``(c, y, x)`` to ``(y, x, c)``; ``box_predictor.cls_score`` -> ``logits``
  (class 0 is the background in both); ``box_predictor.bbox_pred`` -> ``deltas`` without the
  background's four;
* ``roi_heads.mask_head.i`` -> ``mask_head`` ``conv{i+1}`` (and in v2 ``.1`` -> ``norm{i+1}``);
  ``mask_predictor.conv5_mask`` (``ConvTranspose2d`` ``[in, out, kh, kw]``) -> ``upsample``
  ``[kh, kw, out, in]``; ``mask_fcn_logits`` -> ``logits`` without the background's map;
* every box delta ``(dx, dy, dw, dh)`` -> ``(dy, dx, dh, dw)``.

Checkpoints saved before torchvision 0.13 name some modules differently
(``inner_blocks.0.weight``, ``rpn.head.conv.weight``, ``mask_head.mask_fcn1.weight``); they are
read as torchvision reads them.
"""

from __future__ import annotations

import re

import keras
import numpy as np

__all__ = ["assign_checkpoint", "checkpoint_num_classes", "normalise_names"]

_BN = {"weight": "gamma", "bias": "beta", "running_mean": "moving_mean"}
_BN["running_var"] = "moving_variance"
_OLD_NAMES = (
    (
        re.compile(r"^backbone\.fpn\.(inner|layer)_blocks\.(\d+)\.(weight|bias)$"),
        r"backbone.fpn.\1_blocks.\2.0.\3",
    ),
    (re.compile(r"^rpn\.head\.conv\.(weight|bias)$"), r"rpn.head.conv.0.0.\1"),
    (re.compile(r"^roi_heads\.mask_head\.mask_fcn(\d+)\.(weight|bias)$"), None),
)
_DELTAS = [1, 0, 3, 2]  # (dx, dy, dw, dh) -> (dy, dx, dh, dw)


def normalise_names(state: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Old (torchvision < 0.13) module names -> today's; ``num_batches_tracked`` dropped."""
    out = {}
    for name, tensor in state.items():
        if name.endswith("num_batches_tracked"):
            continue
        for pattern, replacement in _OLD_NAMES:
            match = pattern.match(name)
            if match and replacement is None:  # mask_fcn{i} -> {i - 1}.0
                name = f"roi_heads.mask_head.{int(match[1]) - 1}.0.{match[2]}"
            elif match:
                name = pattern.sub(replacement, name)
        out[name] = tensor
    return out


def checkpoint_num_classes(state: dict[str, np.ndarray]) -> int:
    """The checkpoint's classes without the background (torchvision's ``num_classes - 1``)."""
    key = "roi_heads.box_predictor.cls_score.bias"
    if key not in state:
        raise ValueError(f"The checkpoint is not torchvision's Mask R-CNN: it has no {key!r}.")
    return int(state[key].shape[0]) - 1


def _conv(w):
    return np.transpose(w, (2, 3, 1, 0))


def _dense(w):
    return np.transpose(w)


def _backbone_targets(backbone: keras.Model):
    for layer in backbone.layers:
        if isinstance(layer, keras.layers.Conv2D):
            yield f"backbone.body.{_torch_name(layer.name)}.weight", layer.kernel, _conv
        elif isinstance(layer, keras.layers.BatchNormalization):
            yield from _norm_targets(f"backbone.body.{_torch_name(layer.name)}", layer)


def _torch_name(keras_name: str) -> str:
    return keras_name.replace("_", ".")


def _conv_targets(prefix: str, layer, kernel=_conv, bias=None):
    yield f"{prefix}.weight", layer.kernel, kernel
    if layer.use_bias:
        yield f"{prefix}.bias", layer.bias, bias


def _norm_targets(prefix: str, layer):
    for torch_name, attribute in _BN.items():
        yield f"{prefix}.{torch_name}", getattr(layer, attribute), None


def _conv_norm_targets(prefix: str, index: int, conv, norms):
    """torchvision's ``Conv2dNormActivation`` ``<prefix>.<index>``: ``.0`` the convolution,
    ``.1`` its batch norm (when there is one)."""
    yield from _conv_targets(f"{prefix}.{index}.0", conv)
    if norms:
        yield from _norm_targets(f"{prefix}.{index}.1", norms[index])


def _fpn_targets(fpn):
    for i, level in enumerate(fpn.LEVELS):
        for kind, convs, norms in (
            ("inner", fpn.lateral, fpn.lateral_norms),
            ("layer", fpn.output_convs, fpn.output_norms),
        ):
            prefix = f"backbone.fpn.{kind}_blocks.{i}"
            yield from _conv_targets(f"{prefix}.0", convs[level])
            if norms:
                yield from _norm_targets(f"{prefix}.1", norms[level])


def _rpn_targets(rpn):
    for i, conv in enumerate(rpn.convs):
        yield from _conv_targets(f"rpn.head.conv.{i}.0", conv)
    yield from _conv_targets("rpn.head.cls_logits", rpn.objectness)
    yield from _conv_targets(
        "rpn.head.bbox_pred", rpn.deltas, lambda w: _conv(_swap_deltas(w)), _swap_deltas
    )


def _fc_inputs_channels_last(w):
    """A linear layer on a flattened ``(c, 7, 7)`` map -> on the channels-last ``(7, 7, c)``."""
    units, flat = w.shape
    channels = flat // 49
    return w.reshape(units, channels, 7, 7).transpose(2, 3, 1, 0).reshape(flat, units)


def _box_head_targets(box):
    """v1: ``fc6``, ``fc7``; v2: ``0`` ... ``3`` (conv + batch norm), ``5`` (the linear layer
    after ``4``, the flatten)."""
    for i, conv in enumerate(box.convs):
        yield from _conv_norm_targets("roi_heads.box_head", i, conv, box.norms)
    if box.convs:
        names = [f"roi_heads.box_head.{box.num_convs + 1 + 2 * i}" for i in range(box.num_fcs)]
    else:
        names = [f"roi_heads.box_head.fc{6 + i}" for i in range(box.num_fcs)]
    for i, (name, fc) in enumerate(zip(names, box.fcs, strict=True)):
        yield from _conv_targets(name, fc, _fc_inputs_channels_last if i == 0 else _dense)
    yield from _conv_targets("roi_heads.box_predictor.cls_score", box.logits, _dense)
    yield from _conv_targets(
        "roi_heads.box_predictor.bbox_pred",
        box.deltas,
        lambda w: _dense(_swap_deltas(w[4:])),
        lambda b: _swap_deltas(b[4:]),
    )


def _mask_head_targets(mask):
    for i, conv in enumerate(mask.convs):
        yield from _conv_norm_targets("roi_heads.mask_head", i, conv, mask.norms)
    yield from _conv_targets(
        "roi_heads.mask_predictor.conv5_mask", mask.upsample, lambda w: w.transpose(2, 3, 1, 0)
    )
    yield from _conv_targets(
        "roi_heads.mask_predictor.mask_fcn_logits",
        mask.logits,
        lambda w: _conv(w[1:]),
        lambda b: b[1:],
    )


def _head_targets(model):
    yield from _fpn_targets(model.fpn)
    yield from _rpn_targets(model.rpn_head)
    yield from _box_head_targets(model.box_head)
    yield from _mask_head_targets(model.mask_head)


def _swap_deltas(w):
    """Rows ``4 a + (dx, dy, dw, dh)`` -> ``4 a + (dy, dx, dh, dw)``."""
    order = (np.arange(w.shape[0]) // 4) * 4 + np.tile(_DELTAS, w.shape[0] // 4)
    return w[order]


def assign_checkpoint(model, state: dict[str, np.ndarray]) -> None:
    """Set every weight of ``model`` (a [MaskRCNN][lambda_keras.detection.MaskRCNN] built by
    [maskrcnn_resnet50_fpn][lambda_keras.detection.maskrcnn_resnet50_fpn] or its ``_v2``) from
    ``state`` (torchvision's ``state_dict`` as arrays). Nothing is assigned unless every
    tensor fits: raises ``ValueError`` naming the first missing, unused or misshapen tensor."""
    state = normalise_names(state)
    model_name = f"torchvision's {model.name}"
    values = []
    targets = [*_backbone_targets(model.backbone), *_head_targets(model)]
    for name, variable, transform in targets:
        if name not in state:
            raise ValueError(f"The checkpoint is not {model_name}: it has no tensor {name!r}.")
        value = np.asarray(state[name], np.float32)
        value = value if transform is None else transform(value)
        if tuple(value.shape) != tuple(variable.shape):
            raise ValueError(
                f"The checkpoint's {name!r} has shape {tuple(state[name].shape)}; the model "
                f"needs {tuple(variable.shape)} after conversion (a checkpoint of another "
                "model, or of another number of classes)."
            )
        values.append((variable, value))
    unused = sorted(set(state) - {name for name, _, _ in targets})
    if unused:
        raise ValueError(
            f"The checkpoint is not {model_name}: its tensor {unused[0]!r} has no place in the "
            f"model ({len(unused)} unused tensors)."
        )
    covered = {id(variable) for variable, _ in values}
    missed = [w.path for w in model.weights if id(w) not in covered]
    if missed:  # the mapping itself is incomplete: a bug, not a user error
        raise RuntimeError(f"No checkpoint tensor maps to {missed[:3]}.")
    for variable, value in values:
        variable.assign(value)
