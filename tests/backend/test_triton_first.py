"""PyTorch's Triton beside TensorFlow (lambda_keras/backend/triton_first.py): ``import
lambda_keras`` loads Triton before TensorFlow, or bound to its own symbols where TensorFlow came
first, so that PyTorch's compiler and profiler do not crash the interpreter after TensorFlow
2.20-2.21 (Triton 3.7 and newer, PyTorch 2.12 and newer)."""

import importlib.util
import os
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from lambda_keras.backend import triton_first
from tests.backend import child_env

DEEPBIND = getattr(os, "RTLD_DEEPBIND", 0)
linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not DEEPBIND, reason="RTLD_DEEPBIND is Linux's"
)


def installed(folder: Path, tensorflow: str | None = "global", triton: bool = True):
    """A ``find_spec`` that finds Triton's library (or no Triton) and a TensorFlow in ``folder``
    whose wheel loads globally (``"global"``), one that does not (``"local"``) or none (None)."""
    (folder / "triton" / "_C").mkdir(parents=True, exist_ok=True)
    (folder / "triton" / "_C" / "libtriton.so").write_text("")
    (folder / "tensorflow" / "python").mkdir(parents=True, exist_ok=True)
    if tensorflow == "global":
        (folder / "tensorflow" / "python" / "pywrap_dlopen_global_flags.py").write_text("")
    specs = {
        "triton": SimpleNamespace(submodule_search_locations=[str(folder / "triton")]),
        "tensorflow": SimpleNamespace(submodule_search_locations=[str(folder / "tensorflow")]),
    }
    return {
        "triton": specs["triton"] if triton else None,
        "tensorflow": specs["tensorflow"] if tensorflow else None,
    }.get


class Opener:
    """A ``load_library`` that records the file and flags it was called with."""

    def __init__(self, error: Exception | None = None):
        self.calls, self.error = [], error

    def __call__(self, path: str, mode: int):
        self.calls.append((Path(path).name, mode))
        if self.error is not None:
            raise self.error


def load(modules, find_spec, opener, platform="linux", glibc=True):
    return triton_first.load_triton_first(modules, find_spec, opener, platform, lambda: glibc)


@linux_only
def test_triton_loads_before_tensorflow_or_bound_to_itself_after_it(tmp_path):
    flags = sys.getdlopenflags()
    local = flags & ~os.RTLD_GLOBAL
    first = Opener()
    assert load({}, installed(tmp_path), first) == "before tensorflow"
    assert first.calls == [("libtriton.so", local)]
    after = Opener()
    assert load({"tensorflow": None}, installed(tmp_path), after) == "deepbind"
    assert after.calls == [("libtriton.so", local | DEEPBIND)]
    # Another allocator before TensorFlow: no RTLD_DEEPBIND needed, the library is opened.
    assert load({}, installed(tmp_path), Opener(), glibc=False) == "before tensorflow"
    assert sys.getdlopenflags() == flags  # the process's own flags are not touched


@linux_only
@pytest.mark.parametrize(
    "modules, tensorflow, triton, platform, glibc",
    [
        ({}, "local", True, "linux", True),  # a TensorFlow wheel that loads locally
        ({}, None, True, "linux", True),  # no TensorFlow
        ({}, "global", False, "linux", True),  # no Triton
        ({triton_first.LIBRARY: None}, "global", True, "linux", True),  # imported: too late
        ({}, "global", True, "darwin", True),  # not Linux: no RTLD_DEEPBIND, no such wheels
        # jemalloc or tcmalloc preloaded: bound to itself, the library would take glibc's malloc
        ({"tensorflow": None}, "global", True, "linux", False),
    ],
    ids=["local_tensorflow", "no_tensorflow", "no_triton", "imported", "not_linux", "jemalloc"],
)
def test_nothing_is_opened_where_nothing_clashes_or_it_is_unsafe(
    tmp_path, modules, tensorflow, triton, platform, glibc
):
    opener = Opener()
    assert load(modules, installed(tmp_path, tensorflow, triton), opener, platform, glibc) is None
    assert opener.calls == []


def test_nothing_is_opened_on_a_c_library_without_deepbind(tmp_path, monkeypatch):
    monkeypatch.delattr(os, "RTLD_DEEPBIND", raising=False)  # musl
    opener = Opener()
    assert load({"tensorflow": None}, installed(tmp_path), opener) is None
    assert opener.calls == []


@linux_only
def test_a_library_that_does_not_open_is_left_to_pytorch(tmp_path):
    """PyTorch works without Triton (it checks for it itself)."""
    opener = Opener(OSError("libcuda.so.1: cannot open shared object file"))
    assert load({"tensorflow": None}, installed(tmp_path), opener) is None
    assert len(opener.calls) == 1


def test_the_installed_triton_library_is_found_without_importing_triton():
    library = triton_first.triton_library()
    if importlib.util.find_spec("triton") is None:
        assert library is None
    else:
        assert library.is_file() and library.name.startswith("libtriton")


@pytest.mark.tensorflow
def test_the_installed_tensorflow_is_read_without_importing_it():
    """TensorFlow's PyPI wheels 2.20 and 2.21 ship the file that makes them load globally."""
    import tensorflow as tf

    release = tuple(int(part) for part in tf.__version__.split(".")[:2])
    if release not in {(2, 20), (2, 21)}:
        pytest.skip(f"TensorFlow {tf.__version__}: not one of the releases read for this")
    assert triton_first.tensorflow_loads_globally()


def triton_version() -> tuple[int, ...]:
    from importlib.metadata import version

    return tuple(int(part) for part in version("triton").split(".")[:2])


def run(code: str, backend: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code],
        env=child_env(backend),
        capture_output=True,
        text=True,
        timeout=600,
    )


# PyTorch's profiler and its compiler's package: both load Triton where it is installed.
USE_TRITON = (
    "import torch, torch._inductor\n"
    "with torch.profiler.profile() as profile:\n"
    "    torch.ones(4).sum()\n"
)
REPORT = "print(lambda_keras._triton_loaded)\n"
# What LLVM prints as it aborts when a second copy registers its options (Triton 3.9.0).
LLVM_CLASH = "LLVM ERROR: inconsistency in registered CommandLine options"


def needs_a_crashing_triton():
    if importlib.util.find_spec("triton") is None or triton_version() < (3, 7):
        pytest.skip("Triton 3.7 or newer (PyTorch 2.12 or newer) crashes; older did not")
    if not triton_first.tensorflow_loads_globally():
        pytest.skip("this TensorFlow loads its library locally")


@pytest.mark.torch
@pytest.mark.parametrize(
    "backend, first, way",
    [
        ("tensorflow", "import tensorflow\nimport lambda_keras\n", "deepbind"),
        ("jax", "import tensorflow\nimport lambda_keras\n", "deepbind"),
        ("tensorflow", "import lambda_keras\nimport tensorflow\n", "before tensorflow"),
        ("torch", "import lambda_keras\nimport tensorflow\n", "before tensorflow"),
    ],
    ids=["tensorflow_first", "tensorflow_first_on_jax", "lambda_keras_first", "torch"],
)
def test_pytorch_loads_triton_after_tensorflow_and_lambda_keras(backend, first, way):
    if triton_first.triton_library() is None or not triton_first.tensorflow_loads_globally():
        pytest.skip("nothing clashes here: no Triton, or a TensorFlow that loads locally")
    done = run(first + USE_TRITON + REPORT, backend)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == way


@pytest.mark.torch
@pytest.mark.parametrize(
    "code", ["import tensorflow\nimport triton\n", "import tensorflow\n" + USE_TRITON]
)
def test_without_lambda_keras_triton_after_tensorflow_crashes(code):
    """The crash itself, upstream's (tensorflow/tensorflow#124205), where PyTorch's profiler
    loads Triton as above: the check above can fail. Triton 3.8.0 died of a segmentation fault,
    3.9.0 of LLVM's abort on its options registered twice. When a TensorFlow or Triton
    release stops crashing, this test says so, and lambda_keras/backend/triton_first.py may go."""
    needs_a_crashing_triton()
    done = run(code, "tensorflow")
    if done.returncode == -signal.SIGABRT:  # seen with Triton 3.9.0 (PyTorch 2.15.0)
        assert LLVM_CLASH in done.stderr, done.stderr[-2000:]
    else:  # seen with Triton 3.8.0 (PyTorch 2.14.1)
        assert done.returncode == -signal.SIGSEGV, (done.returncode, done.stderr[-2000:])
