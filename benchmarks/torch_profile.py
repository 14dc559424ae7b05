"""What one PyTorch step asks of the machine, from ``torch.profiler``: the device kernels it
launches and their time per step, and the operators that take the most time.

A step whose kernels take less time than the step is bound by the host (Python, dispatch,
launches); one whose kernels fill it is bound by the device, and the table says which kernels.
Kernels replayed from a CUDA graph are listed where the profiler sees them (CUPTI reports them
as kernels of the graph).
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["kernel_profile"]


def kernel_profile(step: Callable[[], object], steps: int = 3, rows: int = 25) -> str:
    """Profile ``steps`` calls of ``step`` (already warmed up) and describe them.

    Returns text: one line with the wall time, device kernels and device time per step (kernels
    only on a GPU; on a CPU the operators' time is the host's), then ``torch.profiler``'s table
    of the ``rows`` operators with the most time of their own (device time on a GPU).
    """
    if steps < 1 or rows < 1:
        raise ValueError(f"`steps` and `rows` must be positive, got steps={steps}, rows={rows}")
    import torch
    from torch.profiler import ProfilerActivity, profile

    cuda = torch.cuda.is_available()
    activities = [ProfilerActivity.CPU, *([ProfilerActivity.CUDA] if cuda else [])]
    with profile(activities=activities) as prof:
        start = time.perf_counter()
        for _ in range(steps):
            step()
        if cuda:
            torch.cuda.synchronize()
        wall = (time.perf_counter() - start) / steps
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    device_ms = sum(e.time_range.elapsed_us() for e in kernels) / 1000 / steps
    summary = (
        f"per step: {wall * 1000:.2f} ms wall, {len(kernels) / steps:.0f} device kernels, "
        f"{device_ms:.2f} ms of kernel time (summed; {steps} steps profiled)"
    )
    if not cuda:
        summary += ": no GPU, the operators ran on the host"
    sort = "self_device_time_total" if cuda else "self_cpu_time_total"
    return f"{summary}\n{prof.key_averages().table(sort_by=sort, row_limit=rows)}"
