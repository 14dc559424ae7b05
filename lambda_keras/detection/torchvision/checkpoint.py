"""torchvision ``maskrcnn_resnet50_fpn`` checkpoints -> the Keras model's weights: the tensor
mapping, strict (every tensor used once, every weight set once, shapes equal).

How torchvision's tensors map (PyTorch is channels first, boxes ``(x1, y1, x2, y2)``; the
project is channels last, boxes ``(y1, x1, y2, x2)``):

* ``backbone.body.<module>`` -> the backbone layer ``<module>`` with ``_`` for ``.``
  (:mod:`.resnet`); ``Conv2d`` ``[out, in, kh, kw]`` -> ``[kh, kw, in, out]``;
  frozen batch norm ``weight``, ``bias``, ``running_mean``, ``running_var`` -> ``gamma``,
  ``beta``, ``moving_mean``, ``moving_variance`` (``num_batches_tracked`` is dropped);
* ``backbone.fpn.inner_blocks.i`` / ``layer_blocks.i`` -> ``fpn`` ``lateral_P{i+2}`` /
  ``output_P{i+2}``; ``rpn.head.conv`` / ``cls_logits`` / ``bbox_pred`` -> ``rpn_head`` ``conv``
  / ``objectness`` / ``deltas``;
* ``roi_heads.box_head.fc6`` / ``fc7`` -> ``box_head`` ``fc1`` / ``fc2`` (``fc6``'s inputs
  reordered from ``(c, y, x)`` to ``(y, x, c)``); ``box_predictor.cls_score`` -> ``logits``
  (class 0 is the background in both); ``box_predictor.bbox_pred`` -> ``deltas`` without the
  background's four;
* ``roi_heads.mask_head.i`` -> ``mask_head`` ``conv{i+1}``; ``mask_predictor.conv5_mask``
  (``ConvTranspose2d`` ``[in, out, kh, kw]``) -> ``upsample`` ``[kh, kw, out, in]``;
  ``mask_fcn_logits`` -> ``logits`` without the background's map;
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
        raise ValueError(
            f"The checkpoint is not torchvision's maskrcnn_resnet50_fpn: it has no {key!r}."
        )
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
            for torch_name, attribute in _BN.items():
                name = f"backbone.body.{_torch_name(layer.name)}.{torch_name}"
                yield name, getattr(layer, attribute), None


def _torch_name(keras_name: str) -> str:
    return keras_name.replace("_", ".")


def _conv_targets(prefix: str, layer, kernel=_conv, bias=None):
    yield f"{prefix}.weight", layer.kernel, kernel
    yield f"{prefix}.bias", layer.bias, bias


def _head_targets(model):
    for i, level in enumerate(("P2", "P3", "P4", "P5")):
        yield from _conv_targets(f"backbone.fpn.inner_blocks.{i}.0", model.fpn.lateral[level])
        yield from _conv_targets(f"backbone.fpn.layer_blocks.{i}.0", model.fpn.output_convs[level])
    rpn = model.rpn_head
    yield from _conv_targets("rpn.head.conv.0.0", rpn.conv)
    yield from _conv_targets("rpn.head.cls_logits", rpn.objectness)
    yield from _conv_targets(
        "rpn.head.bbox_pred", rpn.deltas, lambda w: _conv(_swap_deltas(w)), _swap_deltas
    )
    box = model.box_head

    def fc6(w):
        units, flat = w.shape
        channels = flat // 49
        return w.reshape(units, channels, 7, 7).transpose(2, 3, 1, 0).reshape(flat, units)

    yield from _conv_targets("roi_heads.box_head.fc6", box.fc1, fc6)
    yield from _conv_targets("roi_heads.box_head.fc7", box.fc2, _dense)
    yield from _conv_targets("roi_heads.box_predictor.cls_score", box.logits, _dense)
    yield from _conv_targets(
        "roi_heads.box_predictor.bbox_pred",
        box.deltas,
        lambda w: _dense(_swap_deltas(w[4:])),
        lambda b: _swap_deltas(b[4:]),
    )
    mask = model.mask_head
    for i, conv in enumerate(mask.convs):
        yield from _conv_targets(f"roi_heads.mask_head.{i}.0", conv)
    yield from _conv_targets(
        "roi_heads.mask_predictor.conv5_mask", mask.upsample, lambda w: w.transpose(2, 3, 1, 0)
    )
    yield from _conv_targets(
        "roi_heads.mask_predictor.mask_fcn_logits",
        mask.logits,
        lambda w: _conv(w[1:]),
        lambda b: b[1:],
    )


def _swap_deltas(w):
    """Rows ``4 a + (dx, dy, dw, dh)`` -> ``4 a + (dy, dx, dh, dw)``."""
    order = (np.arange(w.shape[0]) // 4) * 4 + np.tile(_DELTAS, w.shape[0] // 4)
    return w[order]


def assign_checkpoint(model, state: dict[str, np.ndarray]) -> None:
    """Set every weight of ``model`` (a :class:`~lambda_keras.detection.MaskRCNN` built by
    :func:`~lambda_keras.detection.maskrcnn_resnet50_fpn`) from
    ``state`` (torchvision's ``state_dict`` as arrays). Nothing is assigned unless every
    tensor fits: raises ``ValueError`` naming the first missing, unused or misshapen tensor."""
    state = normalise_names(state)
    values = []
    targets = [*_backbone_targets(model.backbone), *_head_targets(model)]
    for name, variable, transform in targets:
        if name not in state:
            raise ValueError(
                "The checkpoint is not torchvision's maskrcnn_resnet50_fpn (v1): it has no "
                f"tensor {name!r}."
            )
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
            "The checkpoint is not torchvision's maskrcnn_resnet50_fpn (v1): its tensor "
            f"{unused[0]!r} has no place in the model ({len(unused)} unused tensors)."
        )
    covered = {id(variable) for variable, _ in values}
    missed = [w.path for w in model.weights if id(w) not in covered]
    if missed:  # the mapping itself is incomplete: a bug, not a user error
        raise RuntimeError(f"No checkpoint tensor maps to {missed[:3]}.")
    for variable, value in values:
        variable.assign(value)
