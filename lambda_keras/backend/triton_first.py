"""PyTorch's Triton beside TensorFlow in one process: Triton's library loaded before TensorFlow,
or bound to its own symbols.

TensorFlow's PyPI wheels 2.20 and 2.21 load their library with ``RTLD_GLOBAL`` (they ship
``tensorflow/python/pywrap_dlopen_global_flags.py``), which puts TensorFlow's statically linked
LLVM into the process's global symbols. Triton 3.7 and newer (with PyTorch 2.12 and newer) has an
LLVM of its own; its library, loaded after TensorFlow, binds to TensorFlow's copy and the
interpreter dies in Triton's initializers (tensorflow/tensorflow#124205): seen as a
segmentation fault with Triton 3.8.0 (PyTorch 2.14.1) and as LLVM's abort "inconsistency in
registered CommandLine options" with 3.9.0 (PyTorch 2.15.0).
PyTorch loads Triton for ``torch.compile`` and ``torch.profiler``, and when Keras' PyTorch
backend is imported: with ``KERAS_BACKEND=torch``, ``import tensorflow`` alone crashes, since
TensorFlow imports Keras.

``lambda_keras`` therefore loads Triton's library when it is imported, before Keras, wherever
both Triton and such a TensorFlow are installed: before TensorFlow if TensorFlow is not imported
yet (nothing clashes then), otherwise with ``RTLD_DEEPBIND``, under which the library uses its
own symbols before the global ones. Only the shared library is opened (``ctypes``), not the
``triton`` package; Python's own import of it later gets the library already loaded, bound as it
was. Nothing is loaded off Linux or on a C library without ``RTLD_DEEPBIND``, nor after
TensorFlow where another allocator serves ``malloc`` (jemalloc or tcmalloc preloaded: bound to
itself, the library would take glibc's). The flags are passed to that one ``dlopen``; the
process's own (``sys.setdlopenflags``) stay as they are. This module imports neither Keras nor
TensorFlow.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import sys
from collections.abc import Callable, Mapping
from importlib.machinery import ModuleSpec
from pathlib import Path

from lambda_keras.backend.glibc_heap import glibc_serves_malloc

__all__ = ["LIBRARY", "load_triton_first", "tensorflow_loads_globally", "triton_library"]

LIBRARY = "triton._C.libtriton"
"""Triton's compiled library as Python imports it: already imported, it is too late."""
TENSORFLOW_HELPER = ("python", "pywrap_dlopen_global_flags.py")
"""The file whose presence in a TensorFlow wheel makes TensorFlow load with ``RTLD_GLOBAL``."""

FindSpec = Callable[[str], "ModuleSpec | None"]


def tensorflow_loads_globally(find_spec: FindSpec = importlib.util.find_spec) -> bool:
    """Whether the installed TensorFlow (if any) loads its library with ``RTLD_GLOBAL``, read
    from its files without importing it."""
    folders = _folders("tensorflow", find_spec)
    return any(Path(folder, *TENSORFLOW_HELPER).is_file() for folder in folders)


def triton_library(find_spec: FindSpec = importlib.util.find_spec) -> Path | None:
    """The file of Triton's compiled library (``triton/_C/libtriton*.so``), found without
    importing Triton, or None where Triton is not installed."""
    for folder in _folders("triton", find_spec):
        found = sorted(Path(folder, "_C").glob("libtriton*.so"))
        if found:
            return found[0]
    return None


def load_triton_first(
    modules: Mapping[str, object] | None = None,
    find_spec: FindSpec = importlib.util.find_spec,
    load_library: Callable[[str, int], object] = ctypes.CDLL,
    platform: str = sys.platform,
    malloc_is_glibcs: Callable[[], bool] = glibc_serves_malloc,
) -> str | None:
    """Opens Triton's library where a TensorFlow that loads globally is installed beside it.

    Args:
        modules: The imported modules (``sys.modules`` when None).
        find_spec: Finds an installed package without importing it.
        load_library: Opens a shared library with ``dlopen`` flags (``ctypes.CDLL``).
        platform: ``sys.platform``; the crash and ``RTLD_DEEPBIND`` are Linux's.
        malloc_is_glibcs: Whether glibc serves ``malloc``
            ([`glibc_serves_malloc`][lambda_keras.backend.glibc_heap.glibc_serves_malloc]).

    Returns:
        How the library was opened: ``"before tensorflow"``, or ``"deepbind"`` where TensorFlow
        was imported already. None where nothing was opened: nothing clashes (no Triton, no
        TensorFlow that loads globally, not Linux), Triton's library is imported already,
        ``RTLD_DEEPBIND`` is missing or unsafe (another allocator serves ``malloc``), or the
        library does not open (PyTorch then finds Triton missing, as it would without this).
    """
    modules = sys.modules if modules is None else modules
    deepbind = getattr(os, "RTLD_DEEPBIND", None)
    if not platform.startswith("linux") or deepbind is None or LIBRARY in modules:
        return None
    library = triton_library(find_spec)
    if library is None or not tensorflow_loads_globally(find_spec):
        return None
    way = "deepbind" if "tensorflow" in modules else "before tensorflow"
    if way == "deepbind" and not malloc_is_glibcs():
        return None
    # Python's own flags for extension modules (RTLD_NOW), local to the library.
    mode = sys.getdlopenflags() & ~os.RTLD_GLOBAL
    try:
        load_library(str(library), mode | deepbind if way == "deepbind" else mode)
    except OSError:
        return None
    return way


def _folders(package: str, find_spec: FindSpec) -> list[str]:
    spec = find_spec(package)
    return list(spec.submodule_search_locations or []) if spec is not None else []
