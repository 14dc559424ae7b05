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


def test_a_passed_test_s_folder_is_removed_and_a_failed_one_s_kept(tmp_path):
    """The project's pytest settings (pyproject.toml) keep the quick tier from leaving its
    gigabytes of SavedModels and checkpoints on disk before CI installs PyTorch."""
    (tmp_path / "test_two.py").write_text(
        "def test_passes(tmp_path):\n"
        "    (tmp_path / 'model.bin').write_bytes(bytes(1000))\n\n"
        "def test_fails(tmp_path):\n"
        "    (tmp_path / 'model.bin').write_bytes(bytes(1000))\n"
        "    assert False\n"
    )
    basetemp = tmp_path / "basetemp"
    run = run_pytest_with_the_project_s_settings(
        tmp_path, f"--basetemp={basetemp}", str(tmp_path / "test_two.py")
    )
    assert run.returncode == 1 and "1 failed, 1 passed" in run.stdout, run.stdout + run.stderr
    folders = sorted(path.name for path in basetemp.iterdir() if not path.is_symlink())
    assert folders == ["test_fails0"]
    assert (basetemp / "test_fails0" / "model.bin").is_file()


def test_a_passed_run_leaves_nothing_in_the_temporary_folder(tmp_path):
    (tmp_path / "test_one.py").write_text(
        "def test_passes(tmp_path_factory):\n"
        "    folder = tmp_path_factory.mktemp('fixture')\n"
        "    (folder / 'model.bin').write_bytes(bytes(1000))\n"
    )
    root = tmp_path / "root"
    root.mkdir()
    run = run_pytest_with_the_project_s_settings(
        tmp_path, str(tmp_path / "test_one.py"), PYTEST_DEBUG_TEMPROOT=str(root)
    )
    assert run.returncode == 0 and "1 passed" in run.stdout, run.stdout + run.stderr
    (user,) = root.iterdir()  # pytest-of-<user>
    assert list(user.iterdir()) == []


def run_pytest_with_the_project_s_settings(
    folder: Path, *arguments: str, **environment: str
) -> subprocess.CompletedProcess:
    """pytest in a child, in ``folder``, with the project's pyproject.toml only: not this run's
    options (``addopts``, ``PYTEST_ADDOPTS``), workers or conftest files."""
    project = Path(__file__).resolve().parents[1]
    environ = {
        name: value
        for name, value in os.environ.items()
        if name != "PYTEST_ADDOPTS" and not name.startswith("PYTEST_XDIST")
    }
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-c", str(project / "pyproject.toml"), "-o", "addopts=",
         "-p", "no:cacheprovider", "--noconftest", *arguments],
        env={**environ, **environment},
        capture_output=True,
        text=True,
        cwd=folder,
        timeout=300,
    )
