"""Benchmark results as data: tables round-trip through the results file and render into the
documentation unchanged, with where they were measured."""

import json
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
import render  # noqa: E402
import results  # noqa: E402

sys.path.remove(str(BENCHMARKS))


@pytest.fixture(autouse=True)
def plain_environment(monkeypatch):
    """No variable that a recorded command names (the suite sets LAMBDA_KERAS_TORCH_COMPILE)."""
    for name in results.COMMAND_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def table():
    t = results.Table("speed", "Speed, ms", ["op", "a", "b"], digits=[0, 1, 2])
    t.add("nms 1000", 1234.56, None)
    t.add("roi_align", 7, "3.5*")
    t.note("b: not installed")
    return t


def test_a_table_prints_and_formats_its_cells(capsys):
    t = table()
    printed = capsys.readouterr().out
    assert "| nms 1000 | 1,234.6 |  |" in printed and "b: not installed" in printed
    assert t.markdown().splitlines()[:2] == ["| op | a | b |", "|---|---|---|"]
    assert "| roi_align | 7 | 3.5* |" in t.markdown()


def test_a_table_refuses_a_row_of_the_wrong_width():
    with pytest.raises(ValueError, match="3 cells expected"):
        table().add("x", 1.0)
    with pytest.raises(ValueError, match="`plot`"):
        results.Table("t", "T", ["a"], plot="pie")


def test_the_results_file_keeps_the_tables_and_where_they_were_measured(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["benchmarks/bench_x.py", "--output=x.json"])
    path = tmp_path / "x.json"
    results.write(str(path), "bench_x", [table()], threads=2)
    data = json.loads(path.read_text())
    assert data["benchmark"] == "bench_x" and data["settings"] == {"threads": 2}
    assert data["command"] == "python benchmarks/bench_x.py --output=x.json"
    assert {"commit", "date", "versions", "cpu", "python"} <= set(data)
    assert data["cpu"]["cores"] >= 1 and "keras" in data["versions"]
    meta, tables = results.read(path)
    assert tables["speed"].markdown() == table().markdown()
    results.write(None, "bench_x", [table()])  # no --output: nothing written, no error


def test_the_command_makes_only_real_paths_relative(tmp_path, monkeypatch):
    """A script run from ``benchmarks/`` writes its own path from the checkout's root and its
    flags as they were (they were once prefixed with the folder)."""
    monkeypatch.chdir(results.ROOT / "benchmarks")
    monkeypatch.setattr(sys, "argv", ["bench_train.py", "--batch=2", "timm", "--output=x.json"])
    results.write(str(tmp_path / "x.json"), "bench_train", [table()])
    command = json.loads((tmp_path / "x.json").read_text())["command"]
    assert command == "python benchmarks/bench_train.py --batch=2 timm --output=x.json"


def test_the_command_starts_with_the_variables_that_change_the_measurement(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["benchmarks/bench_x.py", "--output=x.json"])
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_experimental_ynn_fusion_type=")
    monkeypatch.setenv("LAMBDA_KERAS_TORCH_COMPILE", "0")
    monkeypatch.setenv("OMP_NUM_THREADS", "2")  # set by the benchmark for its children
    monkeypatch.setenv("LAMBDA_KERAS_TORCH_TESTS", "required")  # the test suite's, not a switch
    results.write(str(tmp_path / "x.json"), "bench_x", [table()])
    command = json.loads((tmp_path / "x.json").read_text())["command"]
    assert command == (
        "LAMBDA_KERAS_TORCH_COMPILE=0 XLA_FLAGS=--xla_cpu_experimental_ynn_fusion_type= "
        "python benchmarks/bench_x.py --output=x.json"
    )
    monkeypatch.setenv("XLA_FLAGS", "--a=1 --b=2")  # quoted as a shell reads it
    monkeypatch.setattr(sys, "argv", ["benchmarks/bench_x.py", "--title=a b", "--output=x.json"])
    results.write(str(tmp_path / "x.json"), "bench_x", [table()])
    command = json.loads((tmp_path / "x.json").read_text())["command"]
    assert command == (
        "LAMBDA_KERAS_TORCH_COMPILE=0 XLA_FLAGS='--a=1 --b=2' "
        "python benchmarks/bench_x.py '--title=a b' --output=x.json"
    )


def test_the_recorded_variables_are_xla_flags_and_the_project_s_switches():
    """COMMAND_VARIABLES spells the switches' names (results.py imports no Keras); a switch
    added or renamed in the package fails here until the list follows."""
    from lambda_keras.backend import glibc_heap, torch_channels_last, torch_compiled_step

    switches = {m.VARIABLE for m in (glibc_heap, torch_channels_last, torch_compiled_step)}
    assert set(results.COMMAND_VARIABLES) == {"XLA_FLAGS", *switches}


def test_an_absolute_output_inside_the_checkout_is_written_relative(tmp_path, monkeypatch):
    """A run from another folder (a worktree's script, its own results path) records the
    command as it reads from the checkout's root; a path outside the checkout stays."""
    inside = results.ROOT / "benchmarks" / "results" / "x.json"
    monkeypatch.setattr(sys, "argv", [
        str(results.ROOT / "benchmarks" / "bench_x.py"), f"--output={inside}",
        "--cache=/elsewhere/c",
    ])  # fmt: skip
    results.write(str(tmp_path / "x.json"), "bench_x", [table()])
    command = json.loads((tmp_path / "x.json").read_text())["command"]
    assert command == (
        "python benchmarks/bench_x.py --output=benchmarks/results/x.json --cache=/elsewhere/c"
    )


def test_render_fills_each_block_and_the_check_sees_a_stale_page(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["benchmarks/bench_x.py", "--output=/elsewhere/x.json"])
    results.write(str(tmp_path / "x.json"), "bench_x", [table()])
    monkeypatch.setattr(render, "RESULTS", tmp_path)
    monkeypatch.setitem(render.summaries.SUMMARIES, "x/speed", lambda t: f"{len(t.rows)} rows.")
    page = "# B\n\n<!-- results: x/speed -->\nold figures\n<!-- end results -->\n"
    rendered = render.rendered_page(page, tmp_path / "page.md")
    assert "old figures" not in rendered and table().markdown() in rendered
    assert "Speed, ms\n\n2 rows.\n\n| op |" in rendered  # title, sentence, table
    assert "--output=benchmarks/results/x.json" in rendered  # the repository's path
    assert "![Speed, ms](images/benchmarks/x_speed.png)" in rendered
    assert render.rendered_page(rendered, tmp_path / "page.md") == rendered
    unplotted = render.rendered_page(page.replace("x/speed", "x/speed no-plot"), tmp_path)
    assert "![" not in unplotted and table().markdown() in unplotted
    with pytest.raises(SystemExit, match="no table 'other'"):
        render.rendered_page(page.replace("x/speed", "x/other"), tmp_path)
    monkeypatch.delitem(render.summaries.SUMMARIES, "x/speed")
    with pytest.raises(SystemExit, match="no sentence for x/speed"):
        render.rendered_page(page, tmp_path)


def test_a_plot_draws_numbers_only_one_unit_per_axis(tmp_path, monkeypatch):
    t = results.Table("b", "`model` steps", ["backbone", "params (M)", "step (s)", "train s"])
    t.add("`lambda`", 17.0, 4.9, 5.1)
    t.add("auto's choice", "1.00 (einsum)", None, None)  # a row of text: not drawn
    assert [render.unit(c) for c in t.columns[1:]] == ["M", "s", "s"]
    drawn = []
    import matplotlib.axes

    monkeypatch.setattr(
        matplotlib.axes.Axes,
        "set_yticklabels",
        lambda self, labels, **kw: drawn.append(list(labels)),
    )
    render.plot(t, tmp_path / "b.png")
    assert (tmp_path / "b.png").read_bytes()[:4] == b"\x89PNG"
    assert drawn == [["lambda"], [""]]  # two panels (M, s), one row, no backticks


def test_only_changed_code_marks_figures_as_uncommitted(tmp_path):
    """A results file the script itself rewrote (after each column) or a plot is not a change
    of the code the figures came from; any other tracked file is."""
    import subprocess

    def git(*args):
        done = subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout.strip()

    files = ["benchmarks/results/x.json", "docs/images/benchmarks/x.png", "lambda_keras/x.py"]
    for name in files:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("0")
    git("init", "-q")
    git("add", ".")
    git("commit", "-qm", "first")
    for name in files[:2]:
        (tmp_path / name).write_text("1")
    (tmp_path / "untracked.txt").write_text("1")
    assert git(*results.UNCOMMITTED_CODE) == ""
    (tmp_path / files[2]).write_text("1")
    assert git(*results.UNCOMMITTED_CODE) == "M lambda_keras/x.py"
