"""What compiling the steps cost, printed during ``fit``: on PyTorch, where a model's steps
compile ([`CompiledSteps`][lambda_keras.backend.compiled_steps.CompiledSteps]), the first
step of each input signature traces and compiles its graph (minutes for a Mask R-CNN on a GPU)
before it runs; a run that falls back to Keras' eager step, or to a graph without the CUDA
graphs its mode asked for, says why; where a step compiled for a CPU keeps glibc's buffers in
its heap ([`glibc_heap`][lambda_keras.backend.glibc_heap]), it says so once. Elsewhere it prints
nothing (XLA's compile is part of Keras' first step there). ``predict_on_batch`` and the other
``*_on_batch`` calls run no callbacks: their steps' ``compile_seconds`` say the same."""

from __future__ import annotations

from collections.abc import Callable

import keras

from lambda_keras.backend import glibc_heap

__all__ = ["CompileReport"]


class CompileReport(keras.callbacks.Callback):
    """Prints one line for each graph a compiled step compiled, with its seconds (tracing, the
    compile and the first run), and one line when a step runs eagerly instead, or without the
    CUDA graphs of its mode (``reduce-overhead``), with the reason; once, a line where a step
    compiled for a CPU keeps glibc's buffers in its heap
    ([`glibc_heap`][lambda_keras.backend.glibc_heap]).

    Args:
        print_fn: Where the lines go.

    Examples:
        >>> import keras
        >>> from lambda_keras.backend.compile_report import CompileReport
        >>> callbacks = [CompileReport()]  # model.fit(..., callbacks=callbacks)
    """

    def __init__(self, print_fn: Callable[[str], None] = print):
        super().__init__()
        self.print_fn = print_fn
        self._reported: dict[int, int] = {}  # id of a step function -> compiles reported
        self._eager: set[int] = set()  # ids of step functions reported eager
        self._without_cuda_graphs: set[int] = set()  # ... reported without their CUDA graphs
        self._heap_reported = False  # glibc_heap's settings, once

    def on_train_batch_end(self, batch, logs=None):
        self._report("train")

    def on_test_batch_end(self, batch, logs=None):
        self._report("test")

    def on_predict_batch_end(self, batch, logs=None):
        self._report("predict")

    def _report(self, kind: str) -> None:
        step = getattr(self.model, f"{kind}_function", None)
        seconds = getattr(step, "compile_seconds", None)
        if seconds is None:  # Keras' own step function
            return
        name, key = self.model.name, id(step)  # a new step function (compile()) starts anew
        reason = getattr(step, "cuda_graphs_reason", None)
        if reason is not None and key not in self._without_cuda_graphs:
            self._without_cuda_graphs.add(key)
            self.print_fn(f"{name}: the {kind} step runs without CUDA graphs: {reason[:300]}")
        for index in range(self._reported.get(key, 0), len(seconds)):
            self.print_fn(
                f"{name}: compiled the {kind} step (graph {index + 1}, torch.compile mode "
                f"{step.mode!r}) in {seconds[index]:.1f} s"
            )
        self._reported[key] = len(seconds)
        heap = glibc_heap.applied()
        if getattr(step, "glibc_heap", False) and heap and not self._heap_reported:
            self._heap_reported = True
            self.print_fn(
                "lambda_keras: glibc keeps the buffers it frees, and up to "
                f"{(heap['M_TRIM_THRESHOLD'] + 1) >> 30} GiB of free memory, in its heap for the "
                f"compiled steps on this CPU ({glibc_heap.VARIABLE}=0 leaves it alone)"
            )
        if step.eager_reason is not None and key not in self._eager:
            self._eager.add(key)
            self.print_fn(f"{name}: the {kind} step runs eagerly: {step.eager_reason[:300]}")
