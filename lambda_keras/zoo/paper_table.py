"""The zoo against the paper: ``python -m lambda_keras.zoo.paper_table`` prints the table.

Prints a Markdown table (the one in docs/zoo.md) of the paper's figures next to the models as
built here. Parameters are trainable parameters (batch-norm moving statistics are buffers, not
parameters, as in the paper's frameworks); FLOPs follow
[`lambda_keras.zoo.flops`][lambda_keras.zoo.flops] at 224x224.
"""

from __future__ import annotations

import dataclasses
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np

from lambda_keras.zoo.flops import count_flops
from lambda_keras.zoo.registry import get_model

PARAMS_TOLERANCE = 0.015
FLOPS_TOLERANCE = 0.03


@dataclasses.dataclass(frozen=True)
class PaperRow:
    """One row of the table: a configuration the paper gives parameters (and FLOPs) for, the
    table it is in, and the zoo model and arguments that build it."""

    label: str
    source: str
    model: str
    kwargs: dict
    params_m: float
    flops_m: float | None = None


PAPER = (
    PaperRow("ResNet-50", "Table 3, 12", "resnet50", {}, 25.6),
    PaperRow(
        "ResNet-50, all 3x3 convs -> lambda (L→L→L→L)",
        "Table 3, 12",
        "resnet50",
        {"layout": "LLLL"},
        15.0,
    ),
    PaperRow(
        "ResNet-50, all lambda, \\|u\\|=4 (scope 7x7)",
        "Table 3, 8",
        "resnet50",
        {"layout": "LLLL", "intra_depth": 4},
        16.0,
    ),
    PaperRow("ResNet-50 L→L→L→C", "Table 12", "resnet50", {"layout": "LLLC"}, 21.7),
    PaperRow("ResNet-50 C→L→L→L", "Table 12", "resnet50", {"layout": "CLLL"}, 15.1),
    PaperRow("ResNet-50 C→C→L→L", "Table 12", "resnet50", {"layout": "CCLL"}, 15.4),
    PaperRow("ResNet-50 C→C→C→L", "Table 12", "resnet50", {"layout": "CCCL"}, 18.8),
    PaperRow("ResNet-RS-101 without SE", "Table 13", "resnet_rs101", {"se": False}, 44.6),
    PaperRow("ResNet-RS-101 with SE", "Table 13", "resnet_rs101", {}, 63.6),
    PaperRow("LambdaResNet-101", "Table 13", "lambda_resnet101", {}, 36.9),
    PaperRow("LambdaResNet-101-C4", "Table 13", "lambda_resnet101_c4", {}, 26.0),
    PaperRow("ResNet-RS-152 without SE", "Table 13", "resnet_rs152", {"se": False}, 60.2),
    PaperRow("ResNet-RS-152 with SE", "Table 13", "resnet_rs152", {}, 86.6),
    PaperRow("LambdaResNet-152", "Table 13", "lambda_resnet152", {}, 51.4),
    PaperRow("LambdaResNet-152-C4", "Table 13, 15", "lambda_resnet152_c4", {}, 35.1),
    PaperRow("LambdaResNet-200-C4", "Table 15", "lambda_resnet200_c4", {}, 42.0),
    PaperRow("MobileNetV2", "Table 17", "mobilenet_v2", {}, 3.50, 603.0),
    PaperRow(
        "MobileNetV2 with 2 lightweight lambda blocks",
        "Table 17",
        "lambda_mobilenet_v2",
        {},
        3.21,
        563.0,
    ),
)


def measure(row: PaperRow) -> dict:
    """Build ``row``'s model at 224x224 and measure it."""
    model = get_model(row.model, input_shape=(224, 224, 3), **row.kwargs)
    params = sum(int(np.prod(w.shape)) for w in model.trainable_weights) / 1e6
    flops = count_flops(model) / 1e6 if row.flops_m is not None else None
    return {"row": row, "params_m": params, "flops_m": flops}


def _delta(built: float, paper: float) -> str:
    return f"{100 * (built - paper) / paper:+.1f}%"


def markdown(results: list[dict]) -> str:
    """The Markdown tables (docs/zoo.md) of [`measure`][lambda_keras.zoo.paper_table.measure]'s
    results: the parameters of every row, then the FLOPs of the rows the paper gives them
    for."""
    lines = [
        "| model | paper | builder | params (M), paper | params (M), built | Δ |",
        "|---|---|---|---:|---:|---:|",
    ]
    for result in results:
        row = result["row"]
        args = ", ".join(f"{k}={v!r}" for k, v in row.kwargs.items())
        call = f"`get_model({row.model!r}{', ' + args if args else ''})`"
        lines.append(
            f"| {row.label} | {row.source} | {call} | {row.params_m:.2f} | "
            f"{result['params_m']:.2f} | {_delta(result['params_m'], row.params_m)} |"
        )
    lines += ["", "| model | paper | FLOPs (M), paper | FLOPs (M), built | Δ |"]
    lines.append("|---|---|---:|---:|---:|")
    for result in results:
        row = result["row"]
        if row.flops_m is not None:
            lines.append(
                f"| {row.label} | {row.source} | {row.flops_m:.0f} | {result['flops_m']:.0f} | "
                f"{_delta(result['flops_m'], row.flops_m)} |"
            )
    return "\n".join(lines)


def main() -> None:
    """Measure every row and print the table."""
    results = []
    for row in PAPER:
        results.append(measure(row))
    print(markdown(results))


if __name__ == "__main__":
    main()
