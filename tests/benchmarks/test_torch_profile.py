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

    weights = torch.randn(64, 64)
    text = kernel_profile(lambda: (weights @ weights).relu().sum(), steps=2, rows=5)
    first, *table = text.splitlines()
    assert first.startswith("per step: ") and "ms wall" in first and "2 steps profiled" in first
    if not torch.cuda.is_available():
        assert "0 device kernels" in first and first.endswith("the operators ran on the host")
    assert any("aten::mm" in line for line in table)
    assert sum(line.startswith("aten::") or " aten::" in line for line in table) <= 5 + 2


@pytest.mark.parametrize("steps, rows", [(0, 5), (2, 0)])
def test_bad_counts_are_refused_before_profiling(steps, rows):
    with pytest.raises(ValueError, match=f"steps={steps}, rows={rows}"):
        kernel_profile(lambda: None, steps=steps, rows=rows)
