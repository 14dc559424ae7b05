"""The documentation site built as CI builds it, for the tests that read its pages."""

import importlib
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

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


def docs_module(name: str) -> ModuleType:
    """One of the documentation's generators (``docs/<name>.py``, not a package module)."""
    sys.path.insert(0, str(DOCS))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(DOCS))
