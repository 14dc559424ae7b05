"""On eager PyTorch, roi_align and multilevel_roi_align pool with a sparse matrix product
(lambda_keras/detection/ops/roi_align_sparse.py): the values and gradients of the keras.ops
gathers, and of torchvision's kernel where it is installed (run in the PyTorch child of
tests/test_backends.py; deselected elsewhere)."""

import numpy as np
import pytest

from lambda_keras.detection import ops
from tests.backend import numpy

pytestmark = pytest.mark.backends("torch")  # the sparse path: Keras on PyTorch
TOLERANCE = dict(atol=5e-5, rtol=1e-4)  # float32 sums in another order (1.4e-5 seen, values ~1)


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


@pytest.fixture
def gathers(monkeypatch):
    """Calls a function on the keras.ops gathers instead of the sparse product."""
    from lambda_keras.detection.ops import roi_align_sparse

    calls = []
    applies = roi_align_sparse.applies
    monkeypatch.setattr(roi_align_sparse, "applies", lambda t: calls.append(1) or applies(t))

    def run(function):
        with monkeypatch.context() as patch:
            patch.setattr(roi_align_sparse, "applies", lambda table: False)
            return function()

    run.calls = calls
    return run


@pytest.mark.parametrize("aligned", [True, False])
@pytest.mark.parametrize("valid", [None, [[128, 192], [100, 150]]], ids=["whole", "valid_sizes"])
@pytest.mark.parametrize("sampling", [(2, None), (0, 3)], ids=["fixed", "adaptive"])
def test_the_sparse_product_gives_the_gathers_values(gathers, aligned, valid, sampling):
    rng = np.random.default_rng(0)
    features, rois = pyramid(rng), boxes(rng)
    valid = None if valid is None else np.array(valid, "int32")

    def pooled():
        return numpy(
            ops.multilevel_roi_align(
                features,
                rois,
                output_size=7,
                sampling_ratio=sampling[0],
                max_sampling_ratio=sampling[1],
                aligned=aligned,
                valid_sizes=valid,
            )
        )

    sparse = pooled()
    assert gathers.calls, "the sparse product ran"
    reference = gathers(pooled)
    assert sparse.shape == reference.shape == (2, 40, 7, 7, 5)
    assert np.abs(reference).sum() > 0
    np.testing.assert_allclose(sparse, reference, **TOLERANCE)


def _gradients(maps, rois, *, box_gradient=False):
    import torch

    features = {k: torch.tensor(v, requires_grad=True) for k, v in maps.items()}
    rois = torch.tensor(rois, requires_grad=box_gradient)
    out = ops.multilevel_roi_align(features, rois, output_size=(7, 5), sampling_ratio=2)
    (out * torch.linspace(-1, 1, out.numel()).reshape(out.shape)).sum().backward()
    grads = {
        k: np.zeros(maps[k].shape) if f.grad is None else f.grad.numpy()
        for k, f in features.items()
    }
    if box_gradient:
        grads["boxes"] = rois.grad.numpy()
    return grads


def test_the_sparse_product_gives_the_gathers_gradients(gathers):
    rng = np.random.default_rng(1)
    maps, rois = pyramid(rng), boxes(rng)
    sparse = _gradients(maps, rois)
    reference = gathers(lambda: _gradients(maps, rois))
    assert sum(np.abs(g).sum() > 0 for g in sparse.values()) >= 2  # boxes of several levels
    for level in maps:
        np.testing.assert_allclose(sparse[level], reference[level], **TOLERANCE)


def test_boxes_that_need_a_gradient_get_the_gathers_one(gathers):
    rng = np.random.default_rng(2)
    maps, rois = pyramid(rng, batch=1, channels=3), boxes(rng, batch=1, count=12)
    sparse = _gradients(maps, rois, box_gradient=True)
    reference = gathers(lambda: _gradients(maps, rois, box_gradient=True))
    assert np.abs(reference["boxes"]).sum() > 0
    np.testing.assert_allclose(sparse["boxes"], reference["boxes"], atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("aligned", [True, False])
def test_one_map_gives_the_gathers_values(gathers, aligned):
    rng = np.random.default_rng(3)
    features = rng.normal(size=(2, 32, 48, 5)).astype("float32")
    rois = boxes(rng)

    def pooled():
        return numpy(ops.roi_align(features, rois, (7, 5), 0.25, 2, aligned))

    sparse = pooled()
    reference = gathers(pooled)
    assert sparse.shape == reference.shape == (2, 40, 7, 5, 5)
    np.testing.assert_allclose(sparse, reference, **TOLERANCE)


def test_no_boxes_and_half_precision_maps():
    import torch

    features = np.random.default_rng(4).normal(size=(1, 16, 16, 4)).astype("float32")
    empty = ops.roi_align(features, np.zeros((1, 0, 4), "float32"), 7, 1.0, 2)
    assert tuple(empty.shape) == (1, 0, 7, 7, 4)
    rois = np.array([[[1.0, 2.0, 9.0, 14.0]]], "float32")
    half = ops.roi_align(torch.tensor(features).to(torch.bfloat16), rois, 7, 1.0, 2)
    assert half.dtype == torch.bfloat16  # computed in float32, given back in the maps' dtype
    full = numpy(ops.roi_align(features, rois, 7, 1.0, 2))
    np.testing.assert_allclose(numpy(half.float()), full, atol=0.05, rtol=0.02)


@pytest.mark.torch("torchvision")
@pytest.mark.parametrize("aligned", [True, False])
def test_the_sparse_product_gives_torchvision_kernel_values_and_gradients(aligned):
    import torch
    import torchvision

    rng = np.random.default_rng(5)
    features = rng.normal(size=(1, 40, 56, 6)).astype("float32")
    rois = boxes(rng, batch=1, count=30, canvas=(160, 224))

    def run(pool):
        x = torch.tensor(features, requires_grad=True)
        out = pool(x)
        (out * torch.linspace(-1, 1, out.numel()).reshape(out.shape)).sum().backward()
        return out.detach().numpy(), x.grad.numpy()

    ours = run(lambda x: ops.roi_align(x, rois, 7, 0.25, 2, aligned)[0])
    xyxy = torch.tensor(np.concatenate([np.zeros((30, 1)), rois[0][:, [1, 0, 3, 2]]], 1)).float()
    theirs = run(
        lambda x: torchvision.ops.roi_align(
            x.permute(0, 3, 1, 2), xyxy, 7, 0.25, 2, aligned
        ).permute(0, 2, 3, 1)
    )
    for got, expected in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(got, expected, **TOLERANCE)


def test_the_matrix_is_valid_csr_with_a_cell_that_comes_twice_summed():
    import torch

    from lambda_keras.detection.ops.roi_align_sparse import _Matrix

    columns = torch.tensor([[3, 1, 3, 0], [2, 2, 2, 2], [4, 0, 1, 2]])
    weights = torch.tensor([[0.1, 0.2, 0.3, 0.4], [0.25, 0.25, 0.25, 0.25], [1.0, 2.0, 3.0, 4.0]])
    matrix = _Matrix(columns, weights, cells=5)
    expected = torch.zeros(3, 5).index_put_(
        (torch.arange(3).repeat_interleave(4), columns.reshape(-1)),
        weights.reshape(-1),
        accumulate=True,
    )
    checked = torch.sparse_csr_tensor(
        matrix.starts, matrix.columns, matrix.values, (3, 5), check_invariants=True
    )  # raises unless each row's columns are sorted and distinct
    torch.testing.assert_close(checked.to_dense(), expected)
    transposed = matrix.transposed()
    transposed = torch.sparse_csr_tensor(
        transposed.crow_indices(),
        transposed.col_indices(),
        transposed.values(),
        (5, 3),
        check_invariants=True,
    )
    torch.testing.assert_close(transposed.to_dense(), expected.T)
    grad, table = torch.randn(3, 2), torch.randn(5, 2)
    slots = (grad[:, None, :] * table[columns]).sum(-1)  # d(M @ table) / d weights per slot
    torch.testing.assert_close(matrix.entry_gradients(grad, table), slots)


def test_pooling_warns_the_user_of_nothing_in_a_fresh_process():
    """PyTorch warns once per process that CSR tensors are in beta and, on 2.11 even with
    ``check_invariants=False``, that their checks are off: a fresh process, warnings as errors."""
    import subprocess
    import sys

    from tests.backend import child_env

    script = (
        "import warnings; warnings.simplefilter('error')\n"
        "import numpy as np\n"
        "from lambda_keras.detection import ops\n"
        "maps = np.ones((1, 16, 24, 3), 'float32')\n"
        "boxes = np.array([[[2, 3, 10, 20]]], 'float32')\n"
        "print(tuple(ops.roi_align(maps, boxes, 2).shape))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], env=child_env("torch"), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("(1, 1, 2, 2, 3)")
