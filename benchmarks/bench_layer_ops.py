"""How many operations one lambda layer call issues on Keras' PyTorch backend, per implementation
of the position lambdas, beside timm's ``LambdaLayer`` with the same configuration.

Counted with ``torch.profiler`` (the ATen operators Python dispatches, not those an operator
runs inside itself; in the backward pass those the autograd engine dispatches): a training
call (forward) and a training call with its backward pass, at the paper's c4 shape at 224 px (a
14 x 14 x 256 map, |k| = 16, |h| = 4, scope 23; batch 2: the counts do not depend on it), and
the layer's own Python-level PyTorch calls in the forward pass (``torch.overrides``' function
mode: every ``torch`` function and tensor method, attribute reads such as ``.shape`` not
counted). On a CPU the counts are what a GPU would launch less the kernels a CPU operator hides
(one operator can be several kernels there). Keras' own calls are counted with the layer's: a
call is what a user's step issues.

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


def count_ops(call, backward: bool) -> int:
    """ATen operators dispatched from Python (or by the autograd engine) in one ``call``."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        out = call()
        if backward:
            out.float().sum().backward()
    return sum(
        1
        for e in prof.events()
        if e.name.startswith("aten::")
        and (e.cpu_parent is None or not e.cpu_parent.name.startswith("aten::"))
    ) - (2 if backward else 0)  # the sum and the cast that start the backward pass


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
        table.add(name, count_ops(call, False), count_ops(call, True), count_calls(call))


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
        f"forward and backward) and PyTorch calls from Python (forward), batch {args.batch}, "
        f"{args.size}x{args.size}x{args.channels}, |k|=16, |h|=4, scope {args.scope}",
        ["layer", "forward ops", "forward+backward ops", "forward PyTorch calls"],
        digits=[0, 0, 0, 0],
        plot="none",
    )
    table.print_header()
    measure(args, table)
    write(args.output, "bench_layer_ops", [table], batch=args.batch, size=args.size)


if __name__ == "__main__":
    main()
