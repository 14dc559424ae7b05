"""On PyTorch with torchvision, multilevel_roi_align calls torchvision's kernel: the same values
as the keras.ops path (run in the PyTorch child of tests/test_backends.py; skipped elsewhere)."""

import importlib.util

import keras
import numpy as np
import pytest

from lambda_keras.detection import ops
from tests.backend import numpy

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "torch" or importlib.util.find_spec("torchvision") is None,
    reason="the kernel path: Keras on PyTorch with torchvision installed",
)


def pyramid(rng, batch=2, canvas=(128, 192), channels=5):
    return {
        f"P{level}": rng.normal(
            size=(batch, canvas[0] >> level, canvas[1] >> level, channels)
        ).astype("float32")
        for level in range(2, 6)
    }


def boxes(rng, batch=2, count=40, canvas=(128, 192)):
    """Small, large, border-crossing, degenerate and inverted boxes, landscape and upright."""
    y1 = rng.uniform(-10, canvas[0], (batch, count))
    x1 = rng.uniform(-10, canvas[1], (batch, count))
    h = rng.uniform(0, canvas[0], (batch, count)) * rng.choice([0.05, 0.5, 1.5], (batch, count))
    w = rng.uniform(0, canvas[1], (batch, count)) * rng.choice([0.05, 0.5, 1.5], (batch, count))
    out = np.stack([y1, x1, y1 + h, x1 + w], -1).astype("float32")
    out[:, 0] = [5, 5, 5, 5]  # degenerate
    out[:, 1] = [60, 80, 40, 20]  # inverted
    return out


@pytest.mark.parametrize("aligned", [True, False])
@pytest.mark.parametrize("valid", [None, [[128, 192], [100, 150]]], ids=["whole", "valid_sizes"])
def test_the_kernel_gives_the_keras_ops_values(monkeypatch, aligned, valid):
    from lambda_keras.detection.ops import roi_align_torchvision

    rng = np.random.default_rng(0)
    features, rois = pyramid(rng), boxes(rng)
    valid = None if valid is None else np.array(valid, "int32")

    def pooled():
        return numpy(
            ops.multilevel_roi_align(
                features, rois, output_size=7, sampling_ratio=2, aligned=aligned, valid_sizes=valid
            )
        )

    kernel = pooled()
    monkeypatch.setattr(roi_align_torchvision, "available", lambda: False)
    reference = pooled()
    assert kernel.shape == reference.shape == (2, 40, 7, 7, 5)
    # float32 sums in another order (1.4e-5 at most seen, on values of about 1)
    np.testing.assert_allclose(kernel, reference, atol=5e-5, rtol=1e-4)


def test_the_kernel_gives_the_keras_ops_gradients(monkeypatch):
    import torch

    from lambda_keras.detection.ops import roi_align_torchvision

    rng = np.random.default_rng(1)
    maps, rois = pyramid(rng), boxes(rng)

    def gradients():
        features = {k: torch.tensor(v, requires_grad=True) for k, v in maps.items()}
        out = ops.multilevel_roi_align(features, rois, output_size=7, sampling_ratio=2)
        (out * torch.linspace(-1, 1, out.numel()).reshape(out.shape)).sum().backward()
        return {
            k: np.zeros(maps[k].shape) if f.grad is None else f.grad.numpy()
            for k, f in features.items()
        }

    kernel = gradients()
    monkeypatch.setattr(roi_align_torchvision, "available", lambda: False)
    reference = gradients()
    assert any(np.abs(g).sum() > 0 for g in kernel.values())
    for level in maps:
        np.testing.assert_allclose(kernel[level], reference[level], atol=5e-5, rtol=1e-4)


@pytest.mark.parametrize("aligned", [True, False])
def test_one_map_through_the_kernel_gives_the_keras_ops_values(monkeypatch, aligned):
    from lambda_keras.detection.ops import roi_align_torchvision

    rng = np.random.default_rng(2)
    features = rng.normal(size=(2, 32, 48, 5)).astype("float32")
    rois = boxes(rng)

    def pooled():
        return numpy(ops.roi_align(features, rois, (7, 5), 0.25, 2, aligned))

    kernel = pooled()
    monkeypatch.setattr(roi_align_torchvision, "available", lambda: False)
    reference = pooled()
    assert kernel.shape == reference.shape == (2, 40, 7, 5, 5)
    np.testing.assert_allclose(kernel, reference, atol=5e-5, rtol=1e-4)
