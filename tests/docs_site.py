"""The documentation site built as CI builds it, for the tests that read its pages."""

import importlib
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from filelock import FileLock

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def build_site(site_dir: Path) -> Path:
    """``mkdocs build --strict`` into ``site_dir`` (a warning fails it); returns the folder."""
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site_dir)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return site_dir


def shared_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site built once in a test run, for every module and pytest-xdist worker that reads
    it: the first to ask builds it under a lock, the others wait and read the same folder (they
    only read). A failed build is not kept: the next to ask builds it again and fails too."""
    root = tmp_path_factory.getbasetemp()
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker and root.name == f"popen-{worker}":  # a worker's basetemp, inside the run's
        root = root.parent
    site, built = root / "shared_site", root / "shared_site.built"
    with FileLock(str(root / "shared_site.lock")):
        if not built.exists():
            build_site(site)
            built.touch()
    return site


def docs_module(name: str) -> ModuleType:
    """One of the documentation's generators (``docs/<name>.py``, not a package module)."""
    sys.path.insert(0, str(DOCS))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(DOCS))
