"""Runs a notebook the way the tests do, and stores a run's outputs in the notebook file.

The site shows the notebooks with the outputs stored in ``notebooks/*.ipynb``: they come from
running each notebook top to bottom on a fresh kernel in this checkout, with the environment the
tests use (``LAMBDA_KERAS_NOTEBOOK_SMOKE=1``: small sizes and epochs, on a CPU), less what the
libraries log on stderr::

    python -m tests.notebooks.execution            # every notebook
    python -m tests.notebooks.execution mask_rcnn  # one

Each run records, in the notebook's metadata (``lambda_keras.executed``), the SHA-256 of every
code cell's source as it ran and the environment it ran with; tests/notebooks/test_notebooks.py
fails when a code cell's source no longer matches the run that produced the outputs, so a
changed cell means running this again. The figures are PNGs at a modest dpi, re-encoded with
an 8-bit palette.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
# The figures' resolution in the stored outputs (matplotlib-inline's PNGs; the site scales them).
FIGURE_DPI = 72


def notebook_environment(stem: str, smoke: bool = True) -> dict[str, str]:
    """The environment variables a notebook runs with, beyond the caller's own."""
    env = {"TF_CPP_MIN_LOG_LEVEL": "2"}
    if smoke:
        env["LAMBDA_KERAS_NOTEBOOK_SMOKE"] = "1"
    if stem == "lambda_layers":
        # As on a CPU without AVX-512, where TensorFlow keeps oneDNN, and with it its CPU
        # allocator statistics, off: the memory cell must not depend on them.
        env["TF_ENABLE_ONEDNN_OPTS"] = "0"
    if stem == "train_lambda_resnet":
        # The notebook's TPU path without the TPU: Keras on JAX, DataParallel over two devices
        # (the TPU cores there; compiling is the cost of these tiny steps, not running).
        env["KERAS_BACKEND"] = "jax"
        env["XLA_FLAGS"] = (
            "--xla_force_host_platform_device_count=2 --xla_backend_optimization_level=0 "
            "--xla_llvm_disable_expensive_passes=true"
        )
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    return env


def code_hashes(notebook) -> list[str]:
    """The SHA-256 of every code cell's source, in order."""
    return [
        hashlib.sha256(cell.source.encode()).hexdigest()
        for cell in notebook.cells
        if cell.cell_type == "code"
    ]


def palette_png(encoded: str) -> str:
    """A figure (base64 PNG) re-encoded with an 8-bit palette of its 256 most used colours when
    that is smaller: the figures of noisy images (mask_rcnn's) shrink to about 40%, the plots
    look the same."""
    from PIL import Image

    image = Image.open(io.BytesIO(base64.b64decode(encoded))).convert("RGB")
    buffer = io.BytesIO()
    image.quantize(256, method=Image.Quantize.MEDIANCUT).save(buffer, "PNG", optimize=True)
    smaller = base64.b64encode(buffer.getvalue()).decode()
    return smaller if len(smaller) < len(encoded) else encoded


def run(path: Path, workdir: Path, smoke: bool = True):
    """Executes the notebook at ``path`` top to bottom on a fresh kernel (working directory
    ``workdir``) and returns it with its outputs; raises CellExecutionError naming the cell
    that failed."""
    import nbclient
    import nbformat

    extra = notebook_environment(path.stem, smoke)
    # The figures at FIGURE_DPI: a matplotlibrc that the kernel's matplotlib reads.
    rc_file = workdir / "matplotlibrc"
    rc_file.write_text(f"figure.dpi: {FIGURE_DPI}\n")
    extra["MATPLOTLIBRC"] = str(rc_file)
    saved = {name: os.environ.get(name) for name in extra}
    os.environ.update(extra)
    try:
        notebook = nbformat.read(path, as_version=4)
        client = nbclient.NotebookClient(
            notebook,
            timeout=1800,
            kernel_name="python3",
            record_timing=False,
            resources={"metadata": {"path": str(workdir)}},
        )
        client.execute()
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return notebook


def store(path: Path, smoke: bool = True) -> float:
    """Runs the notebook and writes it back with its outputs and the run's record; returns the
    run's seconds."""
    import nbformat

    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"notebook_{path.stem}_") as workdir:
        notebook = run(path, Path(workdir), smoke)
    seconds = time.perf_counter() - start
    # The libraries' logs and warnings on stderr (TensorFlow's start-up lines, paths of this
    # machine) are not stored: the site shows what the cells print and plot.
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs = [
                output
                for output in cell.outputs
                if not (output.output_type == "stream" and output.name == "stderr")
            ]
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            if "image/png" in output.get("data", {}):
                output.data["image/png"] = palette_png(output.data["image/png"])
    environment = {
        name: value
        for name, value in notebook_environment(path.stem, smoke).items()
        if name != "PYTHONPATH"
    }
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    notebook.metadata.setdefault("lambda_keras", {})["executed"] = {
        "command": "python -m tests.notebooks.execution " + path.stem,
        "environment": environment,
        "figure_dpi": FIGURE_DPI,
        "stored": "stdout, results and figures (8-bit palette PNGs); stderr left out",
        "base_commit": commit,
        "code_sha256": code_hashes(notebook),
    }
    nbformat.write(notebook, path)
    return seconds


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="notebook names (default: all)")
    args = parser.parse_args(argv)
    paths = sorted(NOTEBOOKS.glob("*.ipynb"))
    if args.names:
        paths = [NOTEBOOKS / f"{name}.ipynb" for name in args.names]
    for path in paths:
        seconds = store(path)
        print(f"{path.name}: outputs stored ({seconds:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
