"""torchvision's Mask R-CNN state dicts as tests need them, without PyTorch: every tensor's
name and shape (torchvision 0.29.1, 91 labels, ``num_batches_tracked`` left out) and random
values.

``state_shapes.json`` is ``maskrcnn_resnet50_fpn``'s; ``maskrcnn_resnet50_fpn_v2`` has the same
backbone (checked when its file was written) and the FPN and heads of
``state_shapes_v2_heads.json``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
_V1 = json.loads((HERE / "state_shapes.json").read_text())
_V2_HEADS = json.loads((HERE / "state_shapes_v2_heads.json").read_text())
SHAPES = {
    "maskrcnn_resnet50_fpn": _V1,
    "maskrcnn_resnet50_fpn_v2": {
        **{k: v for k, v in _V1.items() if k.startswith("backbone.body.")},
        **_V2_HEADS,
    },
}


def random_state(model: str = "maskrcnn_resnet50_fpn", seed: int = 0) -> dict[str, np.ndarray]:
    """Random tensors of ``model``'s names and shapes (variances positive)."""
    rng = np.random.default_rng(seed)
    state = {}
    for key, shape in SHAPES[model].items():
        if key.endswith("running_var"):
            state[key] = rng.uniform(0.5, 2.0, shape).astype("float32")
        else:
            state[key] = rng.normal(size=shape).astype("float32")
    return state


def detecting_state(model: str = "maskrcnn_resnet50_fpn", seed: int = 0) -> dict[str, np.ndarray]:
    """A checkpoint of ``model``'s names and shapes that finds objects in any photo: random
    weights scaled by their fan-in (so that activations stay finite through the network),
    identity batch norms, and a box classifier that calls every region "person" (class 1)
    with its regions' boxes unchanged."""
    rng = np.random.default_rng(seed)
    state = {}
    for key, shape in SHAPES[model].items():
        if key.endswith(("running_mean", "bias")):
            value = np.zeros(shape)
        elif key.endswith("running_var") or len(shape) == 1:  # variances, batch-norm scales
            value = np.ones(shape)
        else:
            value = rng.normal(size=shape) / np.sqrt(np.prod(shape[1:]))
        state[key] = value.astype("float32")
    for layer in ("cls_score", "bbox_pred"):
        key = f"roi_heads.box_predictor.{layer}.weight"
        state[key] = np.zeros_like(state[key])
    state["roi_heads.box_predictor.cls_score.bias"][1] = 10.0
    return state
