"""Every notebook runs top to bottom on a fresh kernel (smoke sizes); each is stored with the
outputs of such a run (the site shows them) and names no repository address."""

import hashlib
import re
import subprocess
from pathlib import Path

import pytest

from tests.notebooks import execution

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
IDS = [p.stem for p in NOTEBOOKS]
RERUN = "run `python -m tests.notebooks.execution {}` to store the outputs of a run"


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
def test_notebook_runs_top_to_bottom(path, tmp_path):
    # The environment of tests/notebooks/execution.py, which stores the outputs the site shows.
    notebook = execution.run(path, tmp_path)  # raises CellExecutionError naming the failed cell
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


def prints(source: str) -> bool:
    """Whether a code cell prints: a print() call, not in a comment."""
    return any(re.search(r"\bprint\(", line.split("#")[0]) for line in source.splitlines())


def plots(source: str) -> bool:
    return "plt.show()" in source


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_notebook_is_stored_with_the_outputs_of_its_run(path):
    notebook = nbformat.read(path, as_version=4)
    record = notebook.metadata.get("lambda_keras", {}).get("executed")
    assert record, f"{path.name} has no stored run: " + RERUN.format(path.stem)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    # The sources are those the outputs came from.
    assert len(record["code_sha256"]) == len(code), (
        f"{path.name}: cells added or removed; " + RERUN.format(path.stem)
    )
    for number, (cell, digest) in enumerate(zip(code, record["code_sha256"], strict=True), 1):
        assert hashlib.sha256(cell.source.encode()).hexdigest() == digest, (
            f"{path.name} code cell {number} changed since its outputs were stored; "
            + RERUN.format(path.stem)
        )
    # One run, top to bottom, every cell executed, none failed.
    assert [cell.execution_count for cell in code] == list(range(1, len(code) + 1)), path.name
    for number, cell in enumerate(code, 1):
        kinds = [output.output_type for output in cell.outputs]
        assert "error" not in kinds, f"{path.name} code cell {number} stored an error"
        if prints(cell.source):
            assert any(
                output.output_type == "stream" and output.name == "stdout"
                for output in cell.outputs
            ), f"{path.name} code cell {number} prints, but no printed output is stored"
        if plots(cell.source):
            assert any("image/png" in output.get("data", {}) for output in cell.outputs), (
                f"{path.name} code cell {number} shows a figure, but none is stored"
            )
    # The figures stay small: PNGs at a modest dpi (8-bit palette; mask_rcnn's noisy images
    # are the largest, about 300,000 characters).
    for cell in code:
        for output in cell.outputs:
            png = output.get("data", {}).get("image/png", "")
            assert len(png) < 400_000, f"{path.name}: a {len(png):,}-character figure"
    assert path.stat().st_size < 800_000, f"{path.name}: {path.stat().st_size:,} bytes"


def test_the_stored_outputs_test_fails_on_a_changed_cell(tmp_path):
    """The check above catches an edited code cell and stripped outputs."""
    notebook = nbformat.read(NOTEBOOKS[0], as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    edited = tmp_path / NOTEBOOKS[0].name
    code[-1].source += "\n# edited"
    nbformat.write(notebook, edited)
    with pytest.raises(AssertionError, match="changed since its outputs were stored"):
        test_notebook_is_stored_with_the_outputs_of_its_run(edited)
    code[-1].source = code[-1].source.removesuffix("\n# edited")
    for cell in code:
        cell.outputs, cell.execution_count = [], None
    nbformat.write(notebook, edited)
    with pytest.raises(AssertionError):
        test_notebook_is_stored_with_the_outputs_of_its_run(edited)


# What names a place to get the project from: a forge's address or a pip VCS requirement.
REPOSITORY_ADDRESS = re.compile(
    r"github\.com|gitlab\.|bitbucket\.org|codeberg\.org|sourceforge\.net|\bgit\+|\.git\b", re.I
)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_notebook_names_no_repository_address(path):
    found = REPOSITORY_ADDRESS.findall(path.read_text())
    assert not found, f"{path.name} names a repository address: {found}"


def setup_cell(path: Path) -> str:
    notebook = nbformat.read(path, as_version=4)
    return next(cell.source for cell in notebook.cells if cell.cell_type == "code")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_setup_installs_from_the_readers_copy(path, monkeypatch, tmp_path):
    """Without the project installed, the set-up cell says what to set; with a wheel named, it
    installs that wheel (with the notebook's extras)."""
    import importlib.util

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *args: None if name == "lambda_keras" else real_find_spec(name, *args),
    )
    commands = []
    monkeypatch.setattr(
        subprocess, "check_call", lambda command, **kwargs: commands.append(command)
    )
    for name in ("LAMBDA_KERAS_SOURCE", "TF_CPP_MIN_LOG_LEVEL", "KERAS_BACKEND"):
        monkeypatch.setenv(name, "")  # restored (or removed) after the test, whatever the cell sets
        monkeypatch.delenv(name)
    source = setup_cell(path)
    with pytest.raises(RuntimeError, match="set LAMBDA_KERAS_SOURCE"):
        exec(source, {})
    assert not commands
    wheel = tmp_path / "lambda_keras-0.1.0-py3-none-any.whl"
    monkeypatch.setenv("LAMBDA_KERAS_SOURCE", str(wheel))
    exec(source, {})
    (command,) = commands
    assert command[-1].startswith(f"{wheel}[") and "notebooks" in command[-1], command
