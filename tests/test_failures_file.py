"""A failure's report reaches ``LAMBDA_KERAS_FAILURES_FILE`` while the run goes on (the next
test of a serial run reads it there), once with pytest-xdist's workers too
(tests/failures_file.py)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_each_failure_is_written_as_it_happens(tmp_path, workers):
    (tmp_path / "test_some.py").write_text(
        "import os\n\n"
        "def test_fails():\n    assert 1 + 1 == 3, 'one plus one'\n\n"
        "def test_passes():\n"
        "    if not os.environ.get('PYTEST_XDIST_WORKER'):  # the next test, in the same run\n"
        "        path = os.environ['LAMBDA_KERAS_FAILURES_FILE']\n"
        "        assert 'test_fails' in open(path).read()\n"
    )
    failures = tmp_path / "failures.txt"
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    environ["LAMBDA_KERAS_FAILURES_FILE"] = str(failures)  # (this run's workers set those)
    environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), environ.get("PYTHONPATH", "")])
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
         "tests.failures_file", *workers, str(tmp_path / "test_some.py")],
        cwd=tmp_path, env=environ, capture_output=True, text=True,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    written = failures.read_text()
    assert written.count("FAILED ") == 1, written
    assert "test_some.py::test_fails (call)" in written
    assert "one plus one" in written and "test_passes" not in written  # it did pass


def test_nothing_is_written_without_the_variable(tmp_path, monkeypatch):
    from tests import failures_file

    monkeypatch.delenv(failures_file.VARIABLE, raising=False)
    monkeypatch.chdir(tmp_path)

    class Report:
        failed, nodeid, when, longreprtext = True, "t.py::test", "call", "boom"

    failures_file.pytest_runtest_logreport(Report())
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setenv(failures_file.VARIABLE, str(tmp_path / "f.txt"))
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    failures_file.pytest_runtest_logreport(Report())
    assert (tmp_path / "f.txt").read_text() == "FAILED t.py::test (call)\nboom\n\n"
