"""timm's state dicts as tests need them, without timm: the tensors' names and shapes
(``timm_state_shapes.json``, written by ``timm_equivalence.py --write-shapes``) and random values.

The fixture lists timm's three LambdaResNets and ``resnetrs50``; a deeper ResNet-RS has the same
stem, head and block shapes, with more blocks per stage (each stage's first block like
``resnetrs50``'s first, the others like its second), so its shapes are derived from those
(``test_timm_states.py`` checks the derivation against timm where timm is installed).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from lambda_keras.zoo.resnet_family import DEPTHS

SHAPES: dict[str, dict[str, list[int]]] = json.loads(
    Path(__file__).with_name("timm_state_shapes.json").read_text()
)


def timm_shapes(name: str) -> dict[str, list[int]]:
    """Every tensor of timm's state dict of the zoo model ``name`` with its shape."""
    if name in SHAPES:
        return SHAPES[name]
    depth = int(name.removeprefix("resnet_rs"))
    shapes = {}
    for key, shape in SHAPES["resnet_rs50"].items():
        block = re.match(r"layer(\d)\.(\d+)\.(.+)", key)
        if block is None:
            shapes[key] = shape
        elif block[2] in ("0", "1"):
            stage = int(block[1])
            copies = [0] if block[2] == "0" else range(1, DEPTHS[depth].blocks[stage - 1])
            for j in copies:
                shapes[f"layer{stage}.{j}.{block[3]}"] = shape
    return shapes


def random_state(name: str, seed: int = 0) -> dict[str, np.ndarray]:
    """A state dict with timm's tensor names and shapes and random values."""
    rng = np.random.default_rng(seed)
    state = {}
    for key, shape in timm_shapes(name).items():
        if key.endswith("num_batches_tracked"):
            state[key] = np.array(rng.integers(0, 1000), dtype=np.int64)
        elif key.endswith("running_var"):
            state[key] = rng.uniform(0.5, 2.0, shape).astype("float32")
        else:
            state[key] = rng.normal(0, 0.1, shape).astype("float32")
    return state
