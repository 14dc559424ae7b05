"""The test session keeps what ``tempfile`` makes under pytest's basetemp (tests/conftest.py)."""

import os
import subprocess
import sys
import tempfile
from pathlib import Path


def test_tempfile_writes_under_the_basetemp(tmp_path_factory):
    basetemp = tmp_path_factory.getbasetemp().resolve()
    folder = Path(tempfile.mkdtemp(prefix="lambda_keras_check_")).resolve()
    assert folder.is_relative_to(basetemp), (folder, basetemp)
    assert Path(os.environ["TMPDIR"]).resolve().is_relative_to(basetemp)


def test_a_started_process_writes_under_the_basetemp(tmp_path_factory):
    printed = subprocess.run(
        [sys.executable, "-c", "import tempfile; print(tempfile.mkdtemp())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(printed).resolve().is_relative_to(tmp_path_factory.getbasetemp().resolve())
