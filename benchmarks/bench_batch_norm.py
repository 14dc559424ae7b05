"""A training batch's batch norm on Keras' PyTorch backend, compiled the way the project's steps
compile it, or eager: Keras' formula (which Inductor fuses when compiled) against PyTorch's own
kernels as the project's operators (``lambda_keras/backend/torch_batch_norm.py``), map by map.

For each map ``[batch, height, width, channels]`` the project's ``BatchNormalization`` and a SiLU,
forward and backward, once with the map on Keras' formula and once through the operators, the
median of ``--repeats`` calls. ``--mode=compiled``: the layer's ``stateless_call`` and
``torch.autograd.grad`` traced with ``make_fx``, then ``torch.compile`` with the compiled steps'
Inductor options, as ``CompiledStep`` does (``torch_batch_norm.MIN_VALUES`` set for each path).
``--mode=eager``: the layer's training call and ``backward()`` as Keras' eager steps run them.
The last column says which of the two the layer takes by default (``takes_the_operator``). The
default maps are the batch norms' of the port of timm's LambdaResNet-50 at batch 8, 224 px,
then at batch 2, 64 px.

    python benchmarks/bench_batch_norm.py --output=benchmarks/results/batch_norm.json
    python benchmarks/bench_batch_norm.py --mode=eager \
        --output=benchmarks/results/batch_norm_eager.json
"""

from __future__ import annotations

import argparse
import math
import os

os.environ["KERAS_BACKEND"] = "torch"  # the operators are PyTorch's
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from arguments import positive_int  # noqa: E402
from results import Table, add_output_argument, write  # noqa: E402
from timing import median_seconds  # noqa: E402

MAPS = (
    "8x112x112x64,8x56x56x64,8x56x56x256,8x28x28x128,8x28x28x512,8x14x14x256,8x14x14x1024,"
    "8x7x7x512,8x7x7x2048,2x32x32x64,2x16x16x256,2x8x8x512,2x4x4x1024,2x2x2x2048"
)


def map_shapes(text: str) -> list[tuple[int, int, int, int]]:
    """``"8x56x56x64,2x4x4x1024"``: maps ``[batch, height, width, channels]``."""
    shapes = []
    for item in text.split(","):
        sides = item.strip().split("x")
        if len(sides) != 4 or not all(side.isdigit() and int(side) > 0 for side in sides):
            raise argparse.ArgumentTypeError(
                f"each map must be batch x height x width x channels, four positive integers "
                f"such as 8x56x56x64; received {item!r}"
            )
        shapes.append(tuple(int(side) for side in sides))
    return shapes


def compiled_step(shape: tuple[int, int, int, int], operators: bool):
    """The batch norm and SiLU's training step on ``shape`` compiled, and its arguments."""
    import torch
    from torch.fx.experimental.proxy_tensor import make_fx

    from lambda_keras.backend import torch_batch_norm
    from lambda_keras.backend.torch_compiled_step import INDUCTOR_OPTIONS
    from lambda_keras.layers import BatchNormalization

    layer = BatchNormalization()
    layer.build(shape)
    weights = (*layer.trainable_variables, *layer.non_trainable_variables)
    variables = [v.value.detach() for v in weights]

    def step(x, gradient, *variables):
        with torch.enable_grad():
            x, *weights = (t.detach().requires_grad_(True) for t in (x, *variables[:2]))
            out, moved = layer.stateless_call(weights, variables[2:], x, training=True)
            out = torch.nn.functional.silu(out)
            return (*torch.autograd.grad(out, [x, *weights], gradient), *moved)

    generator = torch.Generator().manual_seed(0)
    x, gradient = (torch.randn(shape, generator=generator) for _ in range(2))
    arguments = (x, gradient, *variables)
    values = math.prod(shape)
    default = torch_batch_norm.MIN_VALUES
    torch_batch_norm.MIN_VALUES = values if operators else values + 1
    try:
        graph = make_fx(step, tracing_mode="fake")(*arguments)
    finally:
        torch_batch_norm.MIN_VALUES = default
    called = {str(node.target) for node in graph.graph.nodes}
    assert ("lambda_keras.batch_norm_training.default" in called) == operators, called
    compiled = torch.compile(graph, fullgraph=True, dynamic=False, options=INDUCTOR_OPTIONS)
    return compiled, arguments


def eager_step(shape: tuple[int, int, int, int], operators: bool):
    """The batch norm and SiLU's training call and backward pass on ``shape``, eagerly."""
    import torch

    from lambda_keras.backend import torch_batch_norm
    from lambda_keras.layers import BatchNormalization

    layer = BatchNormalization()
    layer.build(shape)
    layer._takes_pytorch_kernels = lambda inputs: operators  # the path, whatever the rule
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(shape, generator=generator).requires_grad_(True)
    gradient = torch.randn(shape, generator=generator)
    leaves = [x, *(w.value for w in layer.trainable_variables)]

    def step():
        out = torch.nn.functional.silu(layer(x, training=True))
        torch.autograd.grad(out, leaves, gradient)  # nothing accumulates from call to call

    calls = []
    original = torch_batch_norm.batch_norm_training
    torch_batch_norm.batch_norm_training = lambda *a: calls.append(a) or original(*a)
    try:
        step()
    finally:
        torch_batch_norm.batch_norm_training = original
    assert len(calls) == operators, (shape, operators, len(calls))  # the path asked for ran
    return step


def time_ms(shape, operators: bool, repeats: int, mode: str) -> float:
    import torch

    if mode == "eager":
        return 1000 * median_seconds(eager_step(shape, operators), repeats, warmups=3)
    compiled, arguments = compiled_step(shape, operators)
    with torch.no_grad():
        return 1000 * median_seconds(lambda: compiled(*arguments), repeats, warmups=3)


def taken_by_default(shape, mode: str) -> bool:
    """The layer's own rule (``takes_the_operator``) for a map of ``shape``: on a fake tensor
    where the step is traced."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    from lambda_keras.backend.torch_batch_norm import takes_the_operator

    if mode == "eager":
        return takes_the_operator(torch.empty(shape), -1)
    with FakeTensorMode():
        return takes_the_operator(torch.empty(shape), -1)


def measure(args, table: Table) -> None:
    for shape in args.maps:
        values = math.prod(shape)
        formula = time_ms(shape, False, args.repeats, args.mode)
        kernels = time_ms(shape, True, args.repeats, args.mode)
        taken = taken_by_default(shape, args.mode)
        default = "PyTorch's kernels" if taken else "Keras' formula"
        name = "x".join(str(side) for side in shape)
        table.add(name, values, formula, kernels, kernels / formula, default)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--maps", type=map_shapes, default=map_shapes(MAPS))
    parser.add_argument("--repeats", type=positive_int, default=30)
    parser.add_argument("--threads", type=positive_int, default=2)
    parser.add_argument("--mode", choices=("compiled", "eager"), default="compiled")
    add_output_argument(parser)
    args = parser.parse_args(argv)  # bad arguments are refused before PyTorch is needed
    import torch

    torch.set_num_threads(args.threads)
    how = "compiled (make_fx, then Inductor)" if args.mode == "compiled" else "eagerly"
    table = Table(
        "batch_norm" if args.mode == "compiled" else "batch_norm_eager",
        f"A training batch's batch norm and SiLU, forward and backward, {how} on PyTorch "
        f"{torch.__version__}, {args.threads} threads, float32: Keras' formula against "
        f"PyTorch's kernels as the project's operators, median of {args.repeats} calls (ms)",
        ["map", "values", "Keras' formula (ms)", "PyTorch's kernels (ms)", "kernels x formula",
         "taken by default"],
        digits=[0, 0, 2, 2, 2, 0],
        plot="none",
    )  # fmt: skip
    table.print_header()
    measure(args, table)
    write(args.output, "bench_batch_norm", [table], threads=args.threads, mode=args.mode)


if __name__ == "__main__":
    main()
