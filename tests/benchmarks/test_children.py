"""One column per process: every child gets its backend, its threads and the run's extra
environment (``run_columns``'s ``extra_env``); a failed child leaves its column empty."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import children  # noqa: E402

CHILD = """
import json, os, sys
column = [a for a in sys.argv if a.startswith("--child=")][0].split("=", 1)[1]
if column == "broken":
    sys.exit("broken column")
names = ("KERAS_BACKEND", "OMP_NUM_THREADS", "MALLOC_ARENA_MAX", "MALLOC_MMAP_MAX_")
print("a line before the JSON")
print(json.dumps({"column": column, **{name: os.environ.get(name) for name in names}}))
"""


def _run(tmp_path, columns, extra_env):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    written = []
    results = children.run_columns(
        str(script), columns, ["--output=ignored.json"], 3, lambda c: f"{c}-backend",
        written.append, extra_env,
    )
    return results, written


@pytest.mark.parametrize("extra_env", [None, {"MALLOC_ARENA_MAX": "1", "MALLOC_MMAP_MAX_": "0"}])
def test_every_child_gets_its_backend_threads_and_the_extra_environment(
    tmp_path, monkeypatch, extra_env
):
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    monkeypatch.delenv("MALLOC_MMAP_MAX_", raising=False)
    results, written = _run(tmp_path, ["first", "second"], extra_env)
    extra = extra_env or {}
    for column in ("first", "second"):
        assert results[column] == {
            "column": column,
            "KERAS_BACKEND": f"{column}-backend",
            "OMP_NUM_THREADS": "3",
            "MALLOC_ARENA_MAX": extra.get("MALLOC_ARENA_MAX"),
            "MALLOC_MMAP_MAX_": extra.get("MALLOC_MMAP_MAX_"),
        }
    assert written == [{"first": results["first"]}]  # after each column but the last


def test_a_failed_child_leaves_its_column_empty(tmp_path, capsys):
    results, _ = _run(tmp_path, ["broken", "fine"], None)
    assert results["broken"] == {} and results["fine"]["column"] == "fine"
    assert "broken failed: broken column" in capsys.readouterr().err
