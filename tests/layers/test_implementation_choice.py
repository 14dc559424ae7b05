"""``implementation="auto"``: the break-evens of each backend and device."""

import numpy as np

from lambda_keras.backend import devices as _devices
from lambda_keras.layers import LambdaLayer
from lambda_keras.layers.implementation_choice import CPU_EINSUM_MAX_POSITIONS_PER_WINDOW, cpu_ratio


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
    monkeypatch.setattr(_devices, "cpu_kind", lambda: "tensorflow_without_onednn")
    assert seven.resolve_implementation((39, 39)) == "einsum"  # 1521 <= 32 * 49
    assert seven.resolve_implementation((40, 40)) == "conv"  # 1600 > 32 * 49
    monkeypatch.setattr(_devices, "cpu_kind", lambda: "jax")  # XLA's slow CPU 3-D convolutions
    three = LambdaLayer(16, scope_size=3)
    assert three.resolve_implementation((29, 29)) == "einsum"  # 841 <= 96 * 9
    assert three.resolve_implementation((30, 30)) == "conv"  # 900 > 96 * 9
    assert seven.resolve_implementation((68, 68)) == "einsum"  # 4624 <= 96 * 49
    monkeypatch.setattr(_devices, "cpu_kind", lambda: "torch")  # the batch moves its break-even
    assert seven.resolve_implementation((9, 9)) == "einsum"  # 81 <= 2 * 49 (unknown batch)
    assert seven.resolve_implementation((10, 10)) == "conv"  # 100 > 2 * 49
    assert seven.resolve_implementation((9, 9), batch=32) == "einsum"
    assert seven.resolve_implementation((9, 9), batch=64) == "einsum"  # above 32: 32's ratio
    assert seven.resolve_implementation((9, 9), batch=8) == "conv"  # 81 > 1.5 * 49
    assert seven.resolve_implementation((9, 9), batch=1) == "conv"  # below 8: 8's ratio
    assert seven.resolve_implementation((8, 8), batch=8) == "einsum"  # 64 <= 1.5 * 49
    assert seven.resolve_implementation((8, 8), batch=16) == "einsum"  # 8's ratio up to 31
    assert seven.resolve_implementation((14, 14)) == "conv"  # the paper's c4 at 224 px
    assert LambdaLayer(16, scope_size=23).resolve_implementation((14, 14)) == "einsum"
    monkeypatch.setattr(_devices, "has_accelerator", lambda: True)
    assert seven.resolve_implementation((28, 28)) == "einsum"  # 784 <= 852, the paper's rule
    assert seven.resolve_implementation((30, 30)) == "conv"
    assert LambdaLayer(16, intra_depth=4).resolve_implementation((14, 14)) == "conv"


def test_the_cpu_ratio_of_a_batch_is_the_largest_measured_batch_not_above_it():
    assert cpu_ratio(None, "torch") == 2 and cpu_ratio(1, "torch") == 1.5
    assert cpu_ratio(31, "torch") == 1.5 and cpu_ratio(32, "torch") == 2
    assert cpu_ratio(8, "tensorflow_without_onednn") == 32  # one measured batch
    assert cpu_ratio(8, "another_backend") == 4  # a backend never measured: TensorFlow's
    for kind, by_batch in CPU_EINSUM_MAX_POSITIONS_PER_WINDOW.items():
        assert all(isinstance(b, int) and b > 0 and r >= 1 for b, r in by_batch.items()), kind


def test_a_layer_chooses_by_the_batch_it_is_called_with(monkeypatch):
    chosen = []
    layer = LambdaLayer(16, scope_size=7)
    original = layer.resolve_implementation

    def spy(spatial_shape, batch=None):
        chosen.append((tuple(spatial_shape), batch))
        return original(spatial_shape, batch)

    monkeypatch.setattr(layer, "resolve_implementation", spy)
    layer(np.zeros((3, 9, 9, 16), "float32"))
    assert chosen == [((9, 9), 3)]
