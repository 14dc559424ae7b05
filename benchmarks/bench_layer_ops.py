"""How many operations one lambda layer call issues on Keras' PyTorch backend, per implementation
of the position lambdas, beside timm's ``LambdaLayer`` with the same configuration.

Counted with ``torch.profiler`` (the ATen operators Python dispatches, not those an operator
runs inside itself; in the backward pass those the autograd engine dispatches): a training
call (forward) and a training call with its backward pass, at the paper's c4 shape at 224 px (a
14 x 14 x 256 map, |k| = 16, |h| = 4, scope 23; batch 2: the counts do not depend on it), and
the layer's own Python-level PyTorch calls in the forward pass (``torch.overrides``' function
mode: every ``torch`` function and tensor method, attribute reads such as ``.shape`` not
counted). The operators that compute are counted apart: a view (``reshape``, ``permute``, a
slice), a ``to`` or ``contiguous`` that returns its input and a ``detach`` launch no kernel on a
GPU, so the math's cost is the computing ones; the others are Python's cost. On a CPU the
counts are what a GPU would launch less the kernels a CPU operator hides (one operator can be
several kernels there). Keras' own calls are counted with the layer's: a call is what a user's
step issues.

    python benchmarks/bench_layer_ops.py --output=benchmarks/results/layer_ops.json
"""

from __future__ import annotations

import argparse
import importlib.util
import os

os.environ["KERAS_BACKEND"] = "torch"  # the counts are PyTorch's
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from arguments import positive_int  # noqa: E402
from results import Table, add_output_argument, write  # noqa: E402

IMPLEMENTATIONS = ("einsum", "conv", "depthwise")


# Operators that only describe a tensor anew (a view, its metadata) or return their input as
# it is: no kernel on any device, unless an operator inside them computes (a ``to`` that
# copies, a ``reshape`` or ``contiguous`` that clones).
METADATA_OPS = frozenset(
    "aten::" + name
    for name in (
        "alias", "as_strided", "contiguous", "detach", "detach_", "expand", "expand_as",
        "flatten", "lift_fresh", "narrow", "numel", "permute", "ravel", "reshape",
        "_reshape_alias", "result_type", "select", "size", "slice", "split",
        "split_with_sizes", "squeeze", "squeeze_", "stride", "t", "to", "transpose",
        "unflatten", "unsqueeze", "unsqueeze_", "_unsafe_view", "view", "view_as",
    )
)  # fmt: skip


def computes(event) -> bool:
    """Whether a profiled ATen operator does work on the data: it is not a metadata operator,
    or an ATen operator it calls is not (the profiler's other ranges inside, such as
    ``detach``'s autograd record, are not operators)."""
    return event.name not in METADATA_OPS or any(
        computes(c) for c in event.cpu_children if c.name.startswith("aten::")
    )


def count_ops(call, backward: bool) -> tuple[int, int]:
    """ATen operators dispatched from Python (or by the autograd engine) in one ``call``: all of
    them, and those that compute (see ``computes``)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        out = call()
        if backward:
            out.float().sum().backward()
    dispatched = [
        e
        for e in prof.events()
        if e.name.startswith("aten::")
        and (e.cpu_parent is None or not e.cpu_parent.name.startswith("aten::"))
    ]
    start = 2 if backward else 0  # the sum and the cast that start the backward pass
    return len(dispatched) - start, sum(map(computes, dispatched)) - start


def count_calls(call) -> int:
    """``torch`` functions and tensor methods called from Python in one ``call``."""
    from torch.overrides import TorchFunctionMode

    class Counter(TorchFunctionMode):
        calls = 0

        def __torch_function__(self, func, types, args=(), kwargs=None):
            if getattr(func, "__name__", "") not in ("__get__", "__set__"):
                Counter.calls += 1
            return func(*args, **(kwargs or {}))

    with Counter():
        call()
    return Counter.calls


def keras_layer(implementation: str, args):
    import keras
    import numpy as np

    from lambda_keras.layers import LambdaLayer

    keras.utils.set_random_seed(0)
    layer = LambdaLayer(
        args.channels, key_dim=16, num_heads=4, scope_size=args.scope,
        implementation=implementation,
    )  # fmt: skip
    x = keras.ops.convert_to_tensor(
        np.random.default_rng(0).normal(size=(args.batch, args.size, args.size, args.channels))
        .astype("float32")
    )
    x.requires_grad_(True)
    return lambda: layer(x, training=True)


def timm_layer(args):
    import torch
    from timm.layers.lambda_layer import LambdaLayer

    torch.manual_seed(0)
    layer = LambdaLayer(args.channels, args.channels, num_heads=4, dim_head=16, r=args.scope)
    x = torch.randn(args.batch, args.channels, args.size, args.size, requires_grad=True)
    layer.train()
    return lambda: layer(x)


def measure(args, table: Table) -> None:
    systems = [(f"LambdaLayer {impl}", keras_layer(impl, args)) for impl in IMPLEMENTATIONS]
    if importlib.util.find_spec("timm") is not None:
        systems.append(("timm LambdaLayer", timm_layer(args)))
    else:
        table.note("timm is not installed: its row left out")
    for name, call in systems:
        call().float().sum().backward()  # a warm-up: built, and nothing first-time counted
        forward, forward_computing = count_ops(call, False)
        both, both_computing = count_ops(call, True)
        table.add(name, forward, both, forward_computing, both_computing, count_calls(call))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=positive_int, default=2)
    parser.add_argument("--size", type=positive_int, default=14)
    parser.add_argument("--channels", type=positive_int, default=256)
    parser.add_argument("--scope", type=positive_int, default=23)
    add_output_argument(parser)
    args = parser.parse_args(argv)
    table = Table(
        "ops",
        f"One lambda layer call on PyTorch, training mode: ATen operators dispatched (forward; "
        f"forward and backward), those of them that compute (not a view, nor a conversion "
        f"that returns its input: what launches kernels), and PyTorch calls from Python "
        f"(forward), batch {args.batch}, {args.size}x{args.size}x{args.channels}, |k|=16, "
        f"|h|=4, scope {args.scope}",
        [
            "layer", "forward ops", "forward+backward ops", "forward ops that compute",
            "forward+backward ops that compute", "forward PyTorch calls",
        ],
        digits=[0, 0, 0, 0, 0, 0],
        plot="none",
    )
    table.print_header()
    measure(args, table)
    write(args.output, "bench_layer_ops", [table], batch=args.batch, size=args.size)


if __name__ == "__main__":
    main()
