"""What one PyTorch step asks of the machine, from ``torch.profiler``: the device kernels it
launches and their time per step, the operators' own time and the convolutions' part of it, and
the operators that take the most time.

A step whose kernels take less time than the step is bound by the host (Python, dispatch,
launches); one whose kernels fill it is bound by the device, and the table says which kernels.
Kernels replayed from a CUDA graph are listed where the profiler sees them (CUPTI reports them
as kernels of the graph).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

__all__ = ["KernelProfile", "kernel_profile"]

CONVOLUTION = ("convolution", "conv2d")
"""What the convolutions' ranges have in their names, in any case, forward and backward
(``aten::conv2d``, ``aten::mkldnn_convolution``, ``aten::convolution_backward``,
``aten::cudnn_convolution``, autograd's ``ConvolutionBackward0``): on a CPU oneDNN's kernels,
which compiled steps call as eager ones do."""


@dataclasses.dataclass(frozen=True)
class KernelProfile:
    """One step's profile, per step: ``wall_ms`` under the profiler (which adds its own cost to
    every operator: time the step without it), the device ``kernels`` and their summed
    ``kernel_ms``, the memory ``copies`` and fills (counted apart), all 0 without a GPU;
    ``operator_ms``, the own (self) time of every range the profiler recorded on the host,
    summed: on a CPU the host time of the operators and of the ranges around them (autograd's
    engine, the optimizer's step, a compiled graph's call, whose own time is its generated
    kernels), on a GPU the device time of the kernels each launched, each kernel counted once;
    ``convolution_ms``, the part of it in ranges named ``CONVOLUTION``; ``table``:
    ``torch.profiler``'s table of the costliest operators."""

    steps: int
    wall_ms: float
    kernels: float
    kernel_ms: float
    copies: float
    operator_ms: float
    convolution_ms: float
    gpu: bool
    table: str

    def text(self) -> str:
        summary = (
            f"per step: {self.wall_ms:.2f} ms wall under the profiler, {self.kernels:.0f} device "
            f"kernels taking {self.kernel_ms:.2f} ms (summed), {self.copies:.0f} copies or fills "
            f"({self.steps} steps profiled)"
        )
        if not self.gpu:
            summary += ": no GPU, the operators ran on the host"
        where = "device" if self.gpu else "host"
        own = (
            f"operators' own {where} time: {self.operator_ms:.2f} ms per step, of which "
            f"convolutions {self.convolution_ms:.2f} ms"
        )
        return f"{summary}\n{own}\n{self.table}"


def kernel_profile(step: Callable[[], object], steps: int = 3, rows: int = 25) -> KernelProfile:
    """Profile ``steps`` calls of ``step`` (already warmed up).

    The table lists the ``rows`` operators with the most time of their own (device time on a
    GPU, host time on a CPU). Whether there is a GPU is PyTorch's ``torch.cuda.is_available()``;
    a step computing on the host there shows no kernels.
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
    device = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    copies = [e for e in device if e.name.startswith(("Memcpy", "Memset"))]
    kernels = [e for e in device if e not in copies]
    sort = "self_device_time_total" if cuda else "self_cpu_time_total"
    averages = prof.key_averages()
    # the host's ranges: on a GPU each kernel's time is also an entry of its own (device_type
    # CUDA), which would count it twice
    own = [
        (event.key.lower(), getattr(event, sort) / 1000 / steps)
        for event in averages
        if event.device_type == torch.autograd.DeviceType.CPU
    ]
    return KernelProfile(
        steps=steps,
        wall_ms=wall * 1000,
        kernels=len(kernels) / steps,
        kernel_ms=sum(e.time_range.elapsed_us() for e in kernels) / 1000 / steps,
        copies=len(copies) / steps,
        operator_ms=sum(ms for _, ms in own),
        convolution_ms=sum(ms for name, ms in own if any(c in name for c in CONVOLUTION)),
        gpu=cuda,
        table=averages.table(sort_by=sort, row_limit=rows),
    )
