"""Every notebook runs top to bottom on a fresh kernel (smoke sizes), and none carries outputs."""

import os
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_the_notebooks_exist():
    names = {path.stem for path in NOTEBOOKS}
    assert {"lambda_layers", "train_lambda_resnet", "fine_tune_and_serve", "mask_rcnn"} <= names


# The two training notebooks (60-80 s each on 2 cores) run under -m slow: their paths run in the
# default suite as the trainer and Mask R-CNN script tests. So does lambda_layers (45 s): its
# influence maps are tests/pictures' and its memory sweep is bench_layers.py --scaling.
SLOW_NOTEBOOKS = ("mask_rcnn", "train_lambda_resnet", "lambda_layers")


@pytest.mark.end_to_end
@pytest.mark.parametrize(
    "path",
    [
        pytest.param(p, id=p.stem, marks=pytest.mark.slow if p.stem in SLOW_NOTEBOOKS else ())
        for p in NOTEBOOKS
    ],
)
def test_notebook_runs_top_to_bottom(path, tmp_path, monkeypatch):
    monkeypatch.setenv("LAMBDA_KERAS_NOTEBOOK_SMOKE", "1")
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "2")
    if path.stem == "lambda_layers":
        # As on a CPU without AVX-512, where TensorFlow keeps oneDNN, and with it its CPU
        # allocator statistics, off: the memory cell must not depend on them.
        monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", "0")
    if path.stem == "train_lambda_resnet":
        # The notebook's TPU path without the TPU: Keras on JAX, DataParallel over two devices
        # (the TPU cores there; compiling is the cost of these tiny steps, not running).
        monkeypatch.setenv("KERAS_BACKEND", "jax")
        monkeypatch.setenv(
            "XLA_FLAGS",
            "--xla_force_host_platform_device_count=2 --xla_backend_optimization_level=0 "
            "--xla_llvm_disable_expensive_passes=true",
        )
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    notebook = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()  # raises CellExecutionError naming the cell that failed
    figures = [
        output
        for cell in notebook.cells
        for output in cell.get("outputs", [])
        if "image/png" in output.get("data", {})
    ]
    assert figures, "a notebook shows at least one figure"
    if path.stem == "train_lambda_resnet":
        printed = "".join(
            output.get("text", "")
            for cell in notebook.cells
            for output in cell.get("outputs", [])
            if output.get("output_type") == "stream"
        )
        assert "Keras on jax" in printed
        assert "distribution: keras.distribution.DataParallel over 2 cpu device(s)" in printed


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_stored_without_outputs(path):
    notebook = nbformat.read(path, as_version=4)
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type == "code":
            assert not cell.outputs, f"{path.name} cell {index} carries outputs"
            assert cell.execution_count is None, f"{path.name} cell {index} has an execution count"
