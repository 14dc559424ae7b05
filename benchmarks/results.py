"""Benchmark results as data: the tables a script prints, written with where they came from.

Every benchmark script prints its tables through :class:`Table` and takes ``--output=PATH``
(:func:`add_output_argument`); with it, :func:`write` saves the tables beside the commit, the
package versions, the CPU model and flags, the date and the command line, as JSON.
``benchmarks/render.py`` turns the committed files under ``benchmarks/results/`` into the
documentation's tables and plots, so a figure is typed by a program once.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import os
import platform
import shlex
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("keras", "tensorflow", "tensorflow-cpu", "jax", "torch", "torchvision", "timm")
CPU_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_tile")
# Variables that change what a benchmark measures: the recorded command starts with those set
# (``XLA_FLAGS=... python benchmarks/...``), as a reader types it to measure the same. The
# project's switches (``lambda_keras/backend/switches.py``), not its test suite's variables.
COMMAND_VARIABLES = (
    "XLA_FLAGS",
    "LAMBDA_KERAS_TORCH_COMPILE",
    "LAMBDA_KERAS_TORCH_CHANNELS_LAST",
    "LAMBDA_KERAS_GLIBC_HEAP",
)
# Changed tracked files other than the results and their plots: a script that writes its file
# after each column (or a second script run beside it) does not mark its own figures.
UNCOMMITTED_CODE = (
    "status",
    "--porcelain",
    "--untracked-files=no",
    "--",
    ".",
    ":(exclude)benchmarks/results",
    ":(exclude)docs/images/benchmarks",
)


class Table:
    """One markdown table: printed row by row as it is measured, kept for :func:`write`.

    Args:
        name: The table's key in the results file (``[a-z0-9_]``).
        title: One line printed above it (what was measured, in which unit).
        columns: Column headers.
        digits: Decimals for the float cells of each column (default 2 for all).
        labels: How many leading columns name a row (the others are plotted).
        plot: ``"bars"`` (one bar per value), ``"lines"`` (values against the first column)
            or ``"none"`` (a table that a plot would not help: an equality check, a score).
    """

    def __init__(
        self,
        name: str,
        title: str,
        columns: Sequence[str],
        digits: Sequence[int] | None = None,
        labels: int = 1,
        plot: str = "bars",
    ):
        if plot not in ("bars", "lines", "none"):
            raise ValueError(f"`plot` must be 'bars', 'lines' or 'none'; received {plot!r}.")
        self.name, self.title, self.columns = name, title, list(columns)
        self.labels, self.plot = labels, plot
        self.digits = list(digits) if digits is not None else [2] * len(self.columns)
        if len(self.digits) != len(self.columns):
            raise ValueError(f"`digits` needs one entry per column; received {digits!r}.")
        self.rows: list[list] = []
        self.notes: list[str] = []

    def print_header(self) -> None:
        print(self.title)
        print("\n".join(self.header_lines()), flush=True)

    def header_lines(self) -> list[str]:
        return ["| " + " | ".join(self.columns) + " |", "|" + "---|" * len(self.columns)]

    def add(self, *values) -> None:
        """Append a row (numbers raw, ``None`` for an empty cell) and print it."""
        if len(values) != len(self.columns):
            raise ValueError(f"{self.name}: {len(self.columns)} cells expected, got {values!r}")
        self.rows.append(list(values))
        print(self.row_line(self.rows[-1]), flush=True)

    def note(self, text: str) -> None:
        """A line printed and kept under the table (what was left out, and why)."""
        self.notes.append(text)
        print(text, flush=True)

    def row_line(self, row: Sequence) -> str:
        cells = [_cell(value, digits) for value, digits in zip(row, self.digits, strict=True)]
        return "| " + " | ".join(cells) + " |"

    def kind_of(self, column: int) -> str:
        return "label" if column < self.labels else "value"

    def label(self, row: Sequence) -> str:
        return ", ".join(str(cell) for cell in row[: self.labels])

    def markdown(self) -> str:
        lines = [*self.header_lines(), *(self.row_line(row) for row in self.rows)]
        return "\n".join([*lines, *([""] + self.notes if self.notes else [])])

    def to_json(self) -> dict:
        return {
            "title": self.title,
            "columns": self.columns,
            "digits": self.digits,
            "labels": self.labels,
            "plot": self.plot,
            "rows": self.rows,
            "notes": self.notes,
        }

    @classmethod
    def from_json(cls, name: str, data: dict) -> Table:
        table = cls(
            name, data["title"], data["columns"], data["digits"], data["labels"], data["plot"]
        )
        table.rows, table.notes = [list(r) for r in data["rows"]], list(data.get("notes", []))
        return table


def is_number(value) -> bool:
    """Whether a cell holds a number (not text, None or a bool)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def plain(text: str) -> str:
    """A title, label or column name without Markdown code marks (for plots and sentences)."""
    return text.replace("`", "")


def _cell(value, digits: int) -> str:
    if value is None:
        return ""
    if not is_number(value):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:,.{digits}f}"


def add_output_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--output",
        default=None,
        metavar="PATH",
        help="also write the results as JSON (e.g. benchmarks/results/<name>.json)",
    )


def environment() -> dict:
    """Where the figures came from: commit, versions, CPU, date."""
    versions = {}
    for package in PACKAGES:
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            continue
    return {
        "commit": _git("rev-parse", "--short", "HEAD"),
        "uncommitted_changes": bool(_git(*UNCOMMITTED_CODE)),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        "python": platform.python_version(),
        "versions": versions,
        "cpu": _cpu(),
        "device": device_name(),
    }


def _git(*args: str) -> str:
    try:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return ""
    return done.stdout.strip()


def device_name() -> str:
    """The accelerators the figures came from (the GPUs ``nvidia-smi`` names, a TPU's
    ``/dev/accel0``), ``"cpu"`` without one."""
    try:
        done = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        gpus = [line.strip() for line in done.stdout.splitlines() if line.strip()]
        if gpus:
            return f"{len(gpus)} x {gpus[0]}" if len(set(gpus)) == 1 else ", ".join(gpus)
    except (OSError, subprocess.SubprocessError):
        pass
    return "tpu" if Path("/dev/accel0").exists() else "cpu"


def measured_on(device: str | None = None) -> str:
    """Where a table's figures come from, for its caption: the accelerators ``device`` names
    (by default ``device_name()``), or ``"<n> CPUs"`` without one."""
    device = device_name() if device is None else device
    return f"{os.cpu_count()} CPUs" if device == "cpu" else device


def _cpu() -> dict:
    model, flags = platform.processor() or platform.machine(), set()
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        text = ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name":
            model = value.strip()
        elif key.strip() == "flags":
            flags = set(value.split())
    return {
        "model": model,
        "cores": os.cpu_count(),
        "flags": [flag for flag in CPU_FLAGS if flag in flags],
    }


def write(path: str | None, benchmark: str, tables: Sequence[Table], **settings) -> None:
    """Write ``tables`` to ``path`` as JSON (nothing if ``path`` is None)."""
    if path is None:
        return
    data = {
        "benchmark": benchmark,
        "command": command_line(),
        "settings": settings,
        **environment(),
        "tables": {table.name: table.to_json() for table in tables},
    }
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(data, indent=1) + "\n")
    print(f"results written to {path}", file=sys.stderr)


def command_line() -> str:
    """This run's command as a reader types it in a shell at the checkout's root: the
    variables of ``COMMAND_VARIABLES`` that are set, then ``python`` and the arguments (paths
    in the checkout relative to its root), each quoted where a shell needs it."""
    variables = [
        f"{name}={shlex.quote(os.environ[name])}"
        for name in sorted(COMMAND_VARIABLES)
        if name in os.environ
    ]
    return " ".join([*variables, "python", *[shlex.quote(_relative(a)) for a in sys.argv]])


def _relative(argument: str) -> str:
    """A path in the checkout relative to its root, also as a flag's value (an absolute
    ``--output=`` inside the checkout); any other argument as it is (a flag is not a path,
    wherever the script ran from)."""
    flag, equals, value = argument.partition("=")
    if equals and flag.startswith("--") and Path(value).is_absolute():
        return f"{flag}={_relative(value)}"
    if not (Path(argument).exists() or Path(argument).is_absolute()):
        return argument
    try:
        return str(Path(argument).resolve().relative_to(ROOT))
    except ValueError:
        return argument


def read(path: str | Path) -> tuple[dict, dict[str, Table]]:
    """``(the file's metadata, {name: Table})``."""
    data = json.loads(Path(path).read_text())
    tables = {name: Table.from_json(name, t) for name, t in data.pop("tables").items()}
    return data, tables
