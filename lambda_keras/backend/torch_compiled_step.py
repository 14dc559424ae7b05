"""Keras' training, evaluation and prediction steps on PyTorch, each as one compiled graph.

Keras 3.15 runs a model on its PyTorch backend one op at a time, each op behind Keras' own Python
(``Layer.__call__``, conversions, scopes): on one H100 the port of timm's LambdaResNet-50 trained
at 0.18x timm's speed, and keras.applications' ResNet50 at 0.14x (the project's first GPU run,
2026-11-26). Keras'
``jit_compile=True`` hands ``train_step`` to ``torch.compile``, whose tracer breaks the graph in
Keras' own code (about 25 breaks in one LambdaResNet forward pass, Keras 3.15.1) and at
``loss.backward()``.

A [`CompiledStep`][lambda_keras.backend.torch_compiled_step.CompiledStep] instead runs Keras' code
once per input signature with fake tensors (``torch.fx``'s ``make_fx``): the step written the way
Keras' JAX backend writes it, stateless (``stateless_call``, the loss, ``torch.autograd.grad``,
``optimizer.stateless_apply``, the metrics), records every PyTorch operation it issues,
forward, backward and the optimizer's update alike, into one graph. The graph takes the model's,
the optimizer's and the metrics' variables and the batch, and writes the new values into the
variables in place; ``torch.compile(graph, fullgraph=True, dynamic=False)`` compiles it with
Inductor. So one step is one compiled call: no graph break (``fullgraph``), no host sync in
the traced code (fake tensors refuse to be read; an operator may still sync inside itself, as
Mask R-CNN's NMS, ``lambda_keras::padded_nms``, reads each image's kept count, see
[`nms_torchvision`][lambda_keras.detection.ops.nms_torchvision]), no recompile at a fixed shape
(the graph's guards are its inputs' shapes, dtypes and strides; a batch is made contiguous).
On one H100 the port of timm's LambdaResNet-50 trained 3.5 times and inferred 6.5 times as
fast as with Keras' eager steps (two runs on the same kind of machine:
``benchmarks/bench_torch_steps.py``, the benchmarks page).

CUDA graphs (``LAMBDA_KERAS_TORCH_COMPILE=reduce-overhead``) are not the default yet. On PyTorch
2.11 and an H100 the prediction step of the port of timm's LambdaResNet-50 replayed as CUDA
graphs at 1.8 times the images/s of timm's eager model; its training step compiled and ran once,
then failed at its second call, where the graphs record. On an H200 the cause showed: the traced
step read SGD's learning rate on the host (Keras passes it to ``torch._foreach_add_`` as a
tensor ``alpha``), and CUDA graphs refuse the number where they record (an ``AssertionError``
that PyTorch reports as Dynamo's "Attempt to trace generator"). The trace now multiplies by it
on the device instead, and on a later H200 run both steps replayed as CUDA graphs, faster than
timm's eager model (the benchmarks page); ``fit`` with validation, random layers and Mask
R-CNN under CUDA graphs have GPU-only tests not yet run on one. A step that still reads a value
on the host (``CompiledStep.host_reads``) compiles without CUDA graphs, after one warning. A step
that fails with CUDA graphs is compiled again in the same mode without them
(``reduce-overhead``: ``default``; ``max-autotune``: ``max-autotune-no-cudagraphs``), after one
warning; a step whose graph fails without CUDA graphs runs eagerly from then on, after one
warning.

Where it differs from Keras' eager step:

* Random draws (dropout, stochastic depth, the detection sampler) come from PyTorch's own
  generator, seeded by ``keras.utils.set_random_seed`` or ``torch.manual_seed``: a Keras
  ``SeedGenerator`` on PyTorch builds a ``torch.Generator`` from its state on the host, a host
  sync that would freeze the draws into the graph.
* ``keras.ops.cond`` on a tensor (the loss-scale optimizer of mixed float16) computes both
  branches and selects.
* Each new input signature (shapes, dtypes, the structure of the batch) traces and compiles
  again, once, with a warning after the first (a partial last batch compiles a second graph:
  ``drop_remainder`` avoids it).

A step that cannot be traced (an op that reads a tensor's value on the host; an optimizer's
``gradient_accumulation_steps`` or ``use_ema``, whose conditions update variables) runs as Keras'
eager step, after one warning that says why. A batch of a new input signature after
[`MAX_GRAPHS`][lambda_keras.backend.torch_compiled_step.MAX_GRAPHS] runs as Keras' eager step too
(one warning), while the signatures compiled keep their graphs. A model with its own
``train_step``, ``test_step`` or ``predict_step`` keeps it (with Keras' own step functions).

Inductor compiles with its layout optimization off
([`INDUCTOR_OPTIONS`][lambda_keras.backend.torch_compiled_step.INDUCTOR_OPTIONS]): it takes
4-D tensors for ``[batch, channels, height, width]``, and Keras' are ``[batch, height, width,
channels]``. A step compiled for a CPU keeps glibc's large buffers in its heap, a setting of
the whole process ([`glibc_heap`][lambda_keras.backend.glibc_heap]; ``LAMBDA_KERAS_GLIBC_HEAP=0``
leaves glibc alone): the compiled step allocates its buffers anew at every call, and glibc
would return them to the operating system after each.

The switch ``LAMBDA_KERAS_TORCH_COMPILE``: ``auto`` (the default) compiles on a GPU and leaves
Keras' eager steps on a CPU, where each step compiles for minutes on a few cores before its
first batch (the benchmarks page, "PyTorch: compiled steps against timm", gives the compile
times and the speed after it); ``1`` compiles on every device; ``0`` leaves Keras' steps alone;
or one of
``torch.compile``'s modes by name. Read when a model makes its step function (``model.compile``
makes it again); ``model.compile(jit_compile=False)`` or ``run_eagerly=True`` turns it off for
one model.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import keras

from lambda_keras.backend import glibc_heap
from lambda_keras.backend.stateless_steps import STEPS, clone, is_tensor, trace_safe_keras
from lambda_keras.backend.switches import read_switch

__all__ = [
    "INDUCTOR_OPTIONS", "MAX_GRAPHS", "MODES", "VARIABLE", "CompiledStep", "compile_mode",
    "inductor_options",
]

VARIABLE = "LAMBDA_KERAS_TORCH_COMPILE"
"""``auto`` (default) compiles on a GPU only; ``1`` on every device; ``0`` keeps Keras' own
steps; or one of [`MODES`][lambda_keras.backend.torch_compiled_step.MODES]."""

MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
"""``torch.compile``'s modes, by name, for ``LAMBDA_KERAS_TORCH_COMPILE``."""

CUDA_GRAPH_MODES = {"reduce-overhead": "default", "max-autotune": "max-autotune-no-cudagraphs"}
"""The modes that replay CUDA graphs, each with the same mode without them (a step's fallback)."""
KINDS = ("train", "test", "predict")
MAX_GRAPHS = 8
"""Input signatures a step compiles at most; a batch of another runs as Keras' eager step (the
compiled ones keep their graphs)."""

INDUCTOR_OPTIONS = {"layout_optimization": False}
"""Inductor's settings for every compiled step, over those of its mode. Inductor's layout
optimization takes every 4-D tensor on the way to a convolution for ``[batch, channels, height,
width]`` and stores it channels-last. Keras' tensors are ``[batch, height, width, channels]``
already (the project's convolutions take them as channels-last views), so it stored them as
``[batch, width, channels, height]`` and transposed them before and after its fused kernels:
with it, the port of timm's LambdaResNet-50 predicted a 224 px batch on 2 CPU cores in about
twice the time it takes without (the benchmarks page, "PyTorch: compiled steps against
timm")."""


def compile_mode(
    environ: Mapping[str, str] = os.environ, device: str | None = None, jit_compile: bool = False
) -> str | None:
    """The ``torch.compile`` mode ``LAMBDA_KERAS_TORCH_COMPILE`` asks for on ``device`` (the
    backend's device by default), or None for Keras' own steps: unset or ``auto``, ``"default"``
    on a GPU and None on a CPU (``"default"`` there too for a model compiled with
    ``jit_compile=True``); ``1`` ``"default"`` on every device; ``0`` None; or a mode by name.

    Raises:
        ValueError: the variable holds something else.
    """
    value = read_switch(
        environ, VARIABLE, "auto",
        f"auto (compiled on a GPU, the default), 1 (compiled on every device), 0 (Keras' own "
        f"steps) or one of torch.compile's modes {', '.join(MODES)}",
        names=("auto", *MODES),
    )
    if value is False:
        return None
    if value is True:
        return "default"
    if value in MODES:
        return value
    if jit_compile:
        return "default"
    if device is None:
        from keras.src.backend.torch.core import get_device

        device = str(get_device())
    return "default" if device.startswith("cuda") else None


class CompiledStep:
    """One of a model's step functions (``"train"``, ``"test"`` or ``"predict"``) as compiled
    graphs, one per input signature, with Keras' eager step where a graph cannot be made.

    Called as Keras' PyTorch trainer calls its step functions: with ``[batch]``, a batch as
    ``fit``, ``evaluate`` and ``predict`` take them (``x``, ``(x, y)`` or ``(x, y,
    sample_weight)``, arrays or tensors). Returns what Keras' step returns (the logs; for
    ``"predict"`` the outputs) as tensors the caller owns.

    ``inductor=False`` runs the traced graph as it is, without ``torch.compile`` (for checks:
    what the trace computes, without Inductor's compile time); the step still chooses its mode
    as for Inductor.

    Attributes:
        compiles: Graphs traced and compiled so far, one per input signature (and one more
            for each signature compiled again without CUDA graphs).
        compile_seconds: Seconds each took, tracing and the first call included, in order (a
            graph compiled again without CUDA graphs: the failed attempt's time included).
        eager_reason: Why the step runs eagerly, or None while it is compiled.
        cuda_graphs_reason: Why the step runs without the CUDA graphs its mode asked for, or
            None.
        glibc_heap: Whether glibc keeps the large buffers of this step, compiled for a CPU, in
            its heap ([`glibc_heap`][lambda_keras.backend.glibc_heap]).
        host_reads: Values the last traced graph reads on the host
            (``aten._local_scalar_dense``, a tensor turned into a number): on a GPU each makes
            the step wait for the device, and CUDA graphs may refuse them (a step that has any
            compiles without CUDA graphs).
    """

    def __init__(
        self,
        model: keras.Model,
        kind: str,
        eager: Callable[[list], Any],
        mode: str = "default",
        inductor: bool = True,
    ):
        if kind not in KINDS:
            raise ValueError(f"kind={kind!r}: expected one of {', '.join(KINDS)}.")
        if mode not in MODES:
            raise ValueError(f"mode={mode!r}: expected one of torch.compile's {', '.join(MODES)}.")
        self.model, self.kind, self.eager, self.mode = model, kind, eager, mode
        self.inductor = inductor
        self.compiles = 0
        self.compile_seconds: list[float] = []
        self.eager_reason: str | None = None
        self.cuda_graphs_reason: str | None = None
        self.glibc_heap = False
        self.host_reads = 0
        self._warned_host_reads = False
        self._warned_beyond_max_graphs = False
        self._graphs: dict = {}
        self._signatures_before_fallback: set = set()

    def __call__(self, data: list):
        if self.eager_reason is not None:
            return self.eager(data)
        if len(data) != 1:
            raise ValueError(
                f"A compiled step takes one batch at a time; received {len(data)} "
                "(steps_per_execution must be 1 on PyTorch)."
            )
        batch = _batch_as_tensors(data[0])
        if not self.model.built:  # Keras' predict builds no model (a subclassed one, unbuilt)
            _build(self.model, batch)
        state = self._state()
        key = (_layout(state), *_signature(batch))
        graph = self._graphs.get(key)
        if graph is None:
            if len(self._graphs) >= MAX_GRAPHS:
                return self._eager_beyond_max_graphs(key, data)
            return self._compile_and_run(key, state, batch, data)
        try:
            return self._run(graph, state, batch)
        except Exception as error:
            if not self._graph_failed(error, state, batch):
                raise
            reason = _error_text(error)
        # Outside the handler, so that the failed graph (its traceback, its CUDA graphs'
        # memory) can go before another compile.
        del graph
        return self._after_failure(reason, key, state, batch, data, time.perf_counter())

    def _run(self, graph, state, batch):
        import torch

        with torch.no_grad():
            outputs = graph(*_tensors(state), *_tensor_leaves(batch))
        # Outputs of a CUDA graph are overwritten by its next replay, and any graph's output
        # may be a view of a variable the next step writes in place: the caller gets copies
        # (logs and predictions, small next to the step).
        return keras.tree.map_structure(clone, outputs)

    def _compile_and_run(self, key, state, batch, data, started: float | None = None):
        """Compile the graph of a new input signature and run it; ``started``: when the failed
        attempt in a mode with CUDA graphs began (its time counts)."""
        first_try = started is None
        started = time.perf_counter() if first_try else started
        if self.inductor and _on_cpu(_tensors(state) + _tensor_leaves(batch)):
            # Outside the try: a bad LAMBDA_KERAS_GLIBC_HEAP is the user's error.
            self.glibc_heap = glibc_heap.keep_buffers_in_heap()
        try:
            graph = self._compile(state, batch)
            outputs = self._run(graph, state, batch)
        except Exception as error:  # noqa: BLE001 - the eager step says whether it was the data
            reason = _error_text(error)
            # A compiler error only: an error of the trace is the batch's (Keras' eager step
            # raises it), and CUDA graphs record from the second call on.
            if not (first_try and _is_compiler_error(error)):
                return self._eager_from_now_on(reason, data)
        else:
            self._graphs[key] = graph
            self.compiles += 1
            self.compile_seconds.append(time.perf_counter() - started)
            if len(self._graphs) > 1 and key not in self._signatures_before_fallback:
                self._warn_new_signature(key)
            return outputs
        return self._after_failure(reason, key, state, batch, data, started)

    def _warn_new_signature(self, key) -> None:
        others = [other for other in self._graphs if other != key]
        if any(_only_the_batch_size_differs(key, other) for other in others):
            advice = (
                "Batches of one size compile once: a partial last batch is a new one (a batch "
                "size that divides the data, or drop_remainder=True for a dataset, avoids it)."
            )
        else:
            advice = (
                "Each input shape compiles once (another image size; in detect, a photo that "
                "takes another of the transform's few canvases)."
            )
        warnings.warn(
            f"lambda_keras: {self.model.name}'s {self.kind} step compiled again for a new input "
            f"signature ({_describe(key)}); {len(self._graphs)} graphs so far, at most "
            f"{MAX_GRAPHS} (another after them runs eagerly). {advice}",
            stacklevel=4,
        )

    def _graph_failed(self, error: Exception, state, batch) -> bool:
        """Whether ``error``, raised by a graph that ran before on a batch of this signature, is
        the graph's: an error of ``torch.compile`` itself, or any runtime error where CUDA
        graphs record or replay (a failed capture is a plain ``RuntimeError``)."""
        if _is_compiler_error(error):
            return True
        return self._uses_cuda_graphs(state, batch) and isinstance(error, RuntimeError)

    def _uses_cuda_graphs(self, state, batch) -> bool:
        return self.mode in CUDA_GRAPH_MODES and _on_cuda(
            _tensors(state) + _tensor_leaves(batch)
        )

    def _after_failure(self, reason: str, key, state, batch, data, started: float):
        """After a compiled graph failed: in a mode with CUDA graphs, this batch and the next
        ones run as graphs compiled again in the same mode without CUDA graphs, after one
        warning; otherwise (or if those fail too) Keras' eager step."""
        if not self._uses_cuda_graphs(state, batch):
            return self._eager_from_now_on(reason, data)
        self._signatures_before_fallback = set(self._graphs) | {key}
        self._without_cuda_graphs(
            reason, f"failed in mode {self.mode!r} (with CUDA graphs): {reason[:500]}", again=True
        )
        self._graphs = {}
        return self._compile_and_run(key, state, batch, data, started)

    def _without_cuda_graphs(
        self, reason: str, what: str, again: bool = False, stacklevel: int = 5
    ) -> None:
        """The step's mode from now on: its mode without CUDA graphs, after one warning that
        the step ``what`` (``reason``: the step's ``cuda_graphs_reason``; ``again``: a graph of
        the old mode was compiled already)."""
        fallback = CUDA_GRAPH_MODES[self.mode]
        self.cuda_graphs_reason = f"mode {self.mode!r}: {reason}"
        warnings.warn(
            f"lambda_keras: {self.model.name}'s {self.kind} step {what}. It is compiled "
            f"{'again ' if again else ''}in mode {fallback!r} (the same without CUDA graphs) "
            "and runs so from now on.",
            stacklevel=stacklevel,
        )
        self.mode = fallback

    def _eager_from_now_on(self, reason: str, data: list):
        """Keras' eager step for this batch (it raises where the batch itself is wrong), and
        from now on, after one warning that says why (``reason``)."""
        outputs = self.eager(data)
        self.eager_reason = reason
        warnings.warn(
            f"lambda_keras: {self.model.name}'s {self.kind} step runs eagerly on PyTorch: "
            f"it could not be compiled as one graph ({reason[:500]}). "
            f"{VARIABLE}=0 or model.compile(jit_compile=False) chooses the eager step "
            "without this warning.",
            stacklevel=4,
        )
        return outputs

    def _eager_beyond_max_graphs(self, key, data: list):
        """Keras' eager step for a batch of a signature after ``MAX_GRAPHS`` (warned the first
        time); the signatures compiled keep running their graphs."""
        if not self._warned_beyond_max_graphs:
            self._warned_beyond_max_graphs = True
            warnings.warn(
                f"lambda_keras: {self.model.name}'s {self.kind} step has compiled "
                f"{MAX_GRAPHS} input signatures, the most it keeps; a batch of another "
                f"({_describe(key)}) runs as Keras' eager step, as will any other new one, "
                "while those compiled keep their graphs.",
                stacklevel=4,
            )
        return self.eager(data)

    def _state(self) -> list[list]:
        """The Keras variables the step reads and writes, in groups: trainable, non-trainable,
        the optimizer's, the metrics'."""
        model = self.model
        groups = [model.trainable_variables, model.non_trainable_variables]
        if self.kind == "train":
            groups.append(model.optimizer.variables)
        if self.kind != "predict":
            groups.append(model.metrics_variables)
        return groups

    def _compile(self, groups, batch):
        import torch
        from torch.fx.experimental.proxy_tensor import make_fx

        sizes = [len(group) for group in groups]
        leaves = _tensor_leaves(batch)

        def step(*tensors):
            state, rest = _split(tensors, sizes)
            inputs = _with_tensor_leaves(batch, rest)
            outputs, new_state = STEPS[self.kind](self.model, state, inputs)
            _write(state, new_state)
            return outputs

        with trace_safe_keras(), torch.no_grad():
            graph = make_fx(step, tracing_mode="fake", _allow_non_fake_inputs=False)(
                *_tensors(groups), *leaves
            )
        self._check_host_reads(graph, groups, batch)
        if not self.inductor:
            return graph
        if self._uses_cuda_graphs(groups, batch):
            for tensor in _tensors(groups):
                torch._dynamo.mark_static_address(tensor)
        return torch.compile(
            graph, fullgraph=True, dynamic=False, options=inductor_options(self.mode)
        )

    def _check_host_reads(self, graph, groups, batch) -> None:
        """Counts the values ``graph`` reads on the host (``host_reads``). If there are any: in
        a mode with CUDA graphs, the step switches to the same mode without them, before it
        compiles, after one warning (CUDA graphs may refuse such a value where they record);
        otherwise, on a GPU, one warning."""
        self.host_reads = _host_reads(graph)
        if not self.host_reads:
            return
        what = (
            f"reads {self.host_reads} value(s) on the host (aten._local_scalar_dense: a tensor "
            "turned into a number, in a custom layer, loss or optimizer)"
        )
        if self._uses_cuda_graphs(groups, batch):
            refused = f"{what}, which CUDA graphs may refuse where they record"
            self._without_cuda_graphs(what, refused, stacklevel=6)
        elif not self._warned_host_reads and _on_cuda(_tensors(groups) + _tensor_leaves(batch)):
            self._warned_host_reads = True
            warnings.warn(
                f"lambda_keras: {self.model.name}'s {self.kind} step {what}; each read of a GPU "
                "tensor makes the step wait for the GPU.",
                stacklevel=5,
            )


def _host_reads(graph) -> int:
    """How many values a traced graph reads on the host (``aten._local_scalar_dense`` nodes;
    a custom operator's reads inside its own code are not seen here: those operators carry
    ``cudagraph_unsafe``)."""
    import torch

    target = torch.ops.aten._local_scalar_dense.default
    return sum(node.op == "call_function" and node.target is target for node in graph.graph.nodes)


def inductor_options(mode: str) -> dict[str, Any]:
    """``torch.compile``'s options for a step compiled in ``mode``: the mode's own
    (``torch._inductor.list_mode_options``) and
    [`INDUCTOR_OPTIONS`][lambda_keras.backend.torch_compiled_step.INDUCTOR_OPTIONS]."""
    from torch._inductor import list_mode_options

    return {**list_mode_options(mode, dynamic=False), **INDUCTOR_OPTIONS}


def _build(model: keras.Model, batch) -> None:
    """Creates the model's variables from the batch's shapes in a symbolic pass
    (``compute_output_spec``, the pass Keras' ``fit`` makes before its first step)."""
    from keras.src.backend import compute_output_spec

    x, _, _ = keras.utils.unpack_x_y_sample_weight(batch)

    def spec(value):
        if value is None:
            return None
        return keras.KerasTensor(tuple(value.shape), keras.backend.standardize_dtype(value.dtype))

    compute_output_spec(model, keras.tree.map_structure(spec, x), training=False)


def _tensors(state) -> list:
    return [variable.value for group in state for variable in group]


def _error_text(error: BaseException) -> str:
    """``"Type: message"`` of ``error``; a compiler error raised while handling another error
    is led by that one and where it was raised: PyTorch 2.11's compiled graph reports a failure
    of its generated code or of its CUDA graphs as Dynamo's "Attempt to trace generator", raised
    by the graph module's own error handler (and Dynamo raises that again ``from`` no cause,
    which hides the first error from a traceback but keeps it as the context)."""
    text = f"{type(error).__name__}: {error}".strip()
    context = error.__cause__ or error.__context__
    if context is None or not _is_compiler_error(error) or _is_compiler_error(context):
        return text
    first_line = (str(error).strip().splitlines() or [""])[0]
    return f"{type(context).__name__}{_where(context)}: {context}".strip() + (
        f" (reported as {type(error).__name__}: {first_line})"
    )


def _where(error: BaseException) -> str:
    """`` at <file>:<line> in <function>``, the frame that raised ``error`` (the file from
    its package on), or nothing without a traceback."""
    import traceback

    frames = traceback.extract_tb(error.__traceback__) if error.__traceback__ else []
    if not frames:
        return ""
    last = frames[-1]
    path = last.filename.replace("\\", "/").rpartition("site-packages/")[2]
    return f" at {path}:{last.lineno} in {last.name}"


def _is_compiler_error(error: Exception) -> bool:
    """An error of ``torch.compile`` itself (Dynamo, Inductor), not of the computation."""
    from torch._dynamo.exc import BackendCompilerFailed, TorchDynamoException

    return isinstance(error, (TorchDynamoException, BackendCompilerFailed))


def _on_cuda(tensors) -> bool:
    return any(t.device.type == "cuda" for t in tensors)


def _on_cpu(tensors) -> bool:
    return all(t.device.type == "cpu" for t in tensors)


def _split(tensors, sizes):
    state, start = [], 0
    for size in sizes:
        state.append(list(tensors[start : start + size]))
        start += size
    return state, list(tensors[start:])


def _write(state, new_state) -> None:
    """The new values into the step's input tensors (the graph updates them in place)."""
    import torch

    targets, values = [], []
    for old_group, new_group in zip(state, new_state, strict=True):
        for old, new in zip(old_group, new_group, strict=True):
            if new is not old:
                targets.append(old)
                values.append(new.to(old.dtype))
    if targets:
        torch._foreach_copy_(targets, values)


def _batch_as_tensors(batch):
    """The batch with every leaf but None and strings as a contiguous tensor on the backend's
    device (a graph takes it as an input, not as a constant). Contiguous: the compiled graph is
    specialised to its inputs' strides, so a batch in another memory order (a transposed NumPy
    view) would compile it again without a new signature (``_signature``)."""
    import numpy as np
    from keras.src.backend.torch.core import convert_to_tensor

    def tensor(value):
        if value is None or isinstance(value, (str, bytes)):
            return value
        value = convert_to_tensor(np.asarray(value) if isinstance(value, list) else value)
        return value.contiguous()

    return keras.tree.map_structure(tensor, batch)


def _tensor_leaves(batch) -> list:
    return [leaf for leaf in keras.tree.flatten(batch) if is_tensor(leaf)]


def _with_tensor_leaves(batch, tensors):
    tensors = iter(tensors)
    leaves = [next(tensors) if is_tensor(leaf) else leaf for leaf in keras.tree.flatten(batch)]
    return keras.tree.pack_sequence_as(batch, leaves)


def _signature(batch):
    """What a graph is specialised to: the batch's structure, each tensor's shape, dtype and
    device, and every other leaf's value."""
    described = []
    for leaf in keras.tree.flatten(batch):
        if is_tensor(leaf):
            described.append((tuple(leaf.shape), str(leaf.dtype), str(leaf.device)))
        else:
            described.append(("value", repr(leaf)))
    return str(keras.tree.map_structure(lambda _: 0, batch)), tuple(described)


def _only_the_batch_size_differs(key, other) -> bool:
    """Whether two signatures differ in their tensors' first (batch) dimension alone."""
    if key[:2] != other[:2] or len(key[2]) != len(other[2]):
        return False
    for mine, theirs in zip(key[2], other[2], strict=True):
        if mine[0] == "value" or theirs[0] == "value":
            if mine != theirs:
                return False
        elif mine[0][1:] != theirs[0][1:] or mine[1:] != theirs[1:]:
            return False
    return True


def _layout(state) -> tuple:
    """Which variables the step reads, group by group (a layer frozen or unfrozen since a
    graph was made changes them)."""
    return tuple(tuple(id(variable) for variable in group) for group in state)


def _describe(key) -> str:
    return ", ".join(
        f"{list(shape)} {dtype.removeprefix('torch.')}" for shape, dtype, *_ in key[2]
        if shape != "value"
    )
