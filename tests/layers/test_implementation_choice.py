"""``implementation="auto"``: the break-evens of each backend and device."""

import numpy as np

from lambda_keras.backend import devices as _devices
from lambda_keras.layers import LambdaLayer


def test_auto_implementation_rule(monkeypatch):
    monkeypatch.setattr(_devices, "has_accelerator", lambda: False)
    monkeypatch.setattr(_devices, "cpu_kind", lambda: "tensorflow")
    seven = LambdaLayer(16, scope_size=7)
    assert seven.resolve_implementation((14, 14)) == "einsum"  # 196 <= 4 * 49
    assert seven.resolve_implementation((20, 20)) == "conv"  # 400 > 4 * 49
    assert seven.resolve_implementation((None, None)) == "conv"
    assert LambdaLayer(16, scope_size=23).resolve_implementation((28, 28)) == "einsum"
    assert LambdaLayer(16, scope_size=3).resolve_implementation((7, 7)) == "conv"
    assert LambdaLayer(16, scope_size=3).resolve_implementation((5,)) == "einsum"  # sequences
    assert LambdaLayer(16, scope_size=None).resolve_implementation((64, 64)) == "einsum"
    masked = LambdaLayer(16, scope_size=7, context_mask=np.ones((1024, 1024), bool))
    assert masked.resolve_implementation((32, 32)) == "einsum"
    assert LambdaLayer(16, implementation="depthwise").resolve_implementation((7, 7)) == "depthwise"
    for slow_convolutions in ("jax", "tensorflow_without_onednn"):
        monkeypatch.setattr(_devices, "cpu_kind", lambda kind=slow_convolutions: kind)
        assert seven.resolve_implementation((39, 39)) == "einsum"  # 1521 <= 32 * 49
        assert seven.resolve_implementation((40, 40)) == "conv"  # 1600 > 32 * 49
    monkeypatch.setattr(_devices, "cpu_kind", lambda: "torch")
    assert seven.resolve_implementation((14, 14)) == "einsum"  # 196 <= 4 * 49
    assert seven.resolve_implementation((15, 15)) == "conv"  # 225 > 4 * 49
    monkeypatch.setattr(_devices, "has_accelerator", lambda: True)
    assert seven.resolve_implementation((28, 28)) == "einsum"  # 784 <= 852, the paper's rule
    assert seven.resolve_implementation((30, 30)) == "conv"
    assert LambdaLayer(16, intra_depth=4).resolve_implementation((14, 14)) == "conv"
