"""The kernels of a PyTorch step (benchmarks/torch_profile.py): the line per step and the table
of the costliest operators; bad counts refused."""

import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
from torch_profile import kernel_profile  # noqa: E402  (imports PyTorch only when called)

sys.path.remove(str(BENCHMARKS))


@pytest.mark.torch()
def test_the_profile_names_the_step_s_operators_and_its_time_per_step():
    import torch

    gpu = torch.cuda.is_available()
    weights = torch.randn(64, 64, device="cuda" if gpu else "cpu")
    profile = kernel_profile(lambda: (weights @ weights).relu().sum(), steps=2, rows=5)
    first, *table = profile.text().splitlines()
    assert first.startswith("per step: ") and "ms wall under the profiler" in first
    assert "(2 steps profiled)" in first and profile.steps == 2 and profile.wall_ms > 0
    assert f"{profile.kernels:.0f} device kernels" in first
    if gpu:
        assert profile.kernels >= 3 and profile.kernel_ms > 0  # product, activation, sum
    else:
        assert (profile.kernels, profile.kernel_ms, profile.copies) == (0, 0, 0)
        assert first.endswith("the operators ran on the host")
    operators = [line.split()[0] for line in table[1:] if "aten::" in line]
    assert "aten::mm" in operators and len(operators) <= 5
    assert table[0] == (
        f"operators' own {'device' if gpu else 'host'} time: {profile.operator_ms:.2f} ms per "
        f"step, of which convolutions {profile.convolution_ms:.2f} ms"
    )
    assert profile.convolution_ms == 0  # no convolution in the step
    if gpu:  # each kernel counted once: on its own entry and on the operator that launched it
        assert profile.operator_ms == pytest.approx(profile.kernel_ms, rel=0.1)
    else:  # the ranges' own times add up to at most the profiled steps' time
        assert 0 < profile.operator_ms <= profile.wall_ms * 1.01


@pytest.mark.torch()
def test_the_convolutions_part_of_the_operators_time_is_counted_apart():
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    image = torch.randn(2, 32, 64, 64, device=device, requires_grad=True)
    kernel = torch.randn(32, 32, 3, 3, device=device, requires_grad=True)

    def step():
        torch.nn.functional.conv2d(image, kernel, padding=1).relu().sum().backward()

    step()
    profile = kernel_profile(step, steps=2)
    # relu, sum and their gradients take their share, and a small one beside the 3x3
    # convolution's forward and backward passes: a filter that matched nothing or everything
    # would fail here
    assert 0.5 * profile.operator_ms < profile.convolution_ms < profile.operator_ms


@pytest.mark.parametrize("steps, rows", [(0, 5), (2, 0)])
def test_bad_counts_are_refused_before_profiling(steps, rows):
    with pytest.raises(ValueError, match=f"steps={steps}, rows={rows}"):
        kernel_profile(lambda: None, steps=steps, rows=rows)
