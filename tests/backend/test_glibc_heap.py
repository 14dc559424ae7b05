"""glibc_heap: glibc's mapped buffers and trim threshold set once per process unless the user chose
(``LAMBDA_KERAS_GLIBC_HEAP=0``, glibc's own variables) or the C library or the allocator is
another; a bad value of the switch is a ValueError; in a child process on this machine's glibc,
the heap keeps the memory of buffers freed at once."""

import ctypes
import json
import os
import platform
import subprocess
import sys
from types import SimpleNamespace

import pytest

from lambda_keras.backend import glibc_heap, switches


@pytest.fixture
def fresh(monkeypatch):
    """The module as in a process where nothing was set yet, and a ``mallopt`` that records."""
    monkeypatch.setattr(glibc_heap, "_applied", None)
    calls = []

    def mallopt(parameter: int, value: int) -> int:
        calls.append((parameter, value))
        return 1

    return calls, mallopt


@pytest.mark.parametrize("environ", [{}, {"LAMBDA_KERAS_GLIBC_HEAP": "On"}])
def test_sets_both_settings_once_per_process(fresh, environ):
    calls, mallopt = fresh
    assert glibc_heap.applied() is None
    assert glibc_heap.keep_buffers_in_heap(environ, mallopt, "glibc")
    # M_MMAP_MAX is -4 and M_TRIM_THRESHOLD -1 in <malloc.h>.
    assert calls == [(-4, 0), (-1, 2**31 - 1)]
    assert glibc_heap.applied() == {"M_MMAP_MAX": 0, "M_TRIM_THRESHOLD": 2**31 - 1}
    assert glibc_heap.keep_buffers_in_heap({}, mallopt, "glibc")  # already: nothing more
    assert len(calls) == 2


@pytest.mark.parametrize(
    "environ",
    [
        {"LAMBDA_KERAS_GLIBC_HEAP": "0"},
        {"LAMBDA_KERAS_GLIBC_HEAP": " Off "},
        {"MALLOC_MMAP_THRESHOLD_": "131072"},
        {"MALLOC_TRIM_THRESHOLD_": "0"},
        {"MALLOC_TOP_PAD_": "0"},
        {"MALLOC_MMAP_MAX_": "0"},
        {"GLIBC_TUNABLES": "glibc.pthread.rseq=0:glibc.malloc.trim_threshold=0"},
        {"GLIBC_TUNABLES": "glibc.malloc.mmap_max=0"},
    ],
)
def test_the_user_s_choice_wins(fresh, environ):
    calls, mallopt = fresh
    assert not glibc_heap.keep_buffers_in_heap(environ, mallopt, "glibc")
    assert calls == [] and glibc_heap.applied() is None


@pytest.mark.parametrize(
    "tunables", ["glibc.pthread.rseq=0", "glibc.malloc.tcache_count=0:glibc.malloc.arena_max=2"]
)
def test_tunables_of_other_settings_are_not_a_choice(fresh, tunables):
    calls, mallopt = fresh
    environ = {"GLIBC_TUNABLES": tunables, "LAMBDA_KERAS_GLIBC_HEAP": "1"}
    assert glibc_heap.keep_buffers_in_heap(environ, mallopt, "glibc")
    assert len(calls) == 2


def fake_library(malloc: int, **functions):
    return SimpleNamespace(malloc=ctypes.c_void_p(malloc), **functions)


def test_glibc_s_mallopt_only_where_glibc_serves_malloc(monkeypatch):
    """jemalloc or tcmalloc preloaded serve ``malloc`` (tcmalloc's ``mallopt`` does nothing and
    returns 1): nothing is set, and nothing said to be."""
    glibc = fake_library(2, mallopt="glibc's mallopt")
    for process, expected in ((fake_library(2), "glibc's mallopt"), (fake_library(7), None)):
        monkeypatch.setattr(
            glibc_heap.ctypes, "CDLL", lambda name, process=process: process if name is None
            else glibc
        )
        assert glibc_heap._glibc_mallopt() == expected
        assert glibc_heap.glibc_serves_malloc() is (expected is not None)

    def no_library(name):
        raise OSError("libc.so.6: cannot open shared object file")

    monkeypatch.setattr(glibc_heap.ctypes, "CDLL", no_library)
    assert glibc_heap._glibc_mallopt() is None and not glibc_heap.glibc_serves_malloc()


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's allocator only")
def test_this_process_s_malloc_is_glibc_s():
    assert glibc_heap._glibc_mallopt() is not None


@pytest.mark.parametrize("libc", ["", "musl", "libc"])
def test_other_c_libraries_are_left_alone(fresh, libc):
    calls, mallopt = fresh
    assert not glibc_heap.keep_buffers_in_heap({}, mallopt, libc)
    assert calls == []


def test_a_refused_value_leaves_nothing_recorded(fresh):
    assert not glibc_heap.keep_buffers_in_heap({}, lambda parameter, value: 0, "glibc")
    assert glibc_heap.applied() is None


def test_a_bad_switch_names_the_variable_the_value_and_the_choices(fresh):
    calls, mallopt = fresh
    with pytest.raises(ValueError, match=r"LAMBDA_KERAS_GLIBC_HEAP='yes please'.*1.*0"):
        glibc_heap.keep_buffers_in_heap({"LAMBDA_KERAS_GLIBC_HEAP": "yes please"}, mallopt)
    assert calls == []


CHILD = """
import ctypes, importlib.util, json, sys

# The module and the one it imports, from their files: lambda_keras' own import would bring
# Keras and its backend, whose allocations would fill the heap being measured.
for name, path in zip(("lambda_keras.backend.switches", "glibc_heap"), sys.argv[1:]):
    spec = importlib.util.spec_from_file_location(name, path)
    sys.modules[name] = module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
glibc_heap = sys.modules["glibc_heap"]
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
MIB = 2**20


def step():
    # Like a compiled step: buffers of a few MiB allocated, written, then all freed at once,
    # and one above 32 MiB (glibc's largest mmap threshold) like a detector's feature map.
    sizes = [(3 + 3 * (index % 3)) * MIB for index in range(24)] + [48 * MIB]
    buffers = [libc.malloc(size) for size in sizes]
    for buffer in buffers:
        ctypes.memset(buffer, 1, 3 * MIB)
    for buffer in buffers:
        libc.free(buffer)


def heap_after_steps():
    # glibc's heap (bytes from sbrk, in use or free) once a step freed its buffers.
    for _ in range(3):
        step()
    return libc.mallinfo2().arena // MIB


class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost",
    )]


libc.mallinfo2.restype = MallInfo2


default = heap_after_steps()
kept = glibc_heap.keep_buffers_in_heap()
print(json.dumps({"default": default, "kept": kept, "after": heap_after_steps()}))
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's allocator only")
def test_on_this_glibc_freed_buffers_stay_in_the_heap():
    """About 192 MiB allocated and freed at once, three times, one buffer of 48 MiB among them
    (in a process of its own: the settings are the process's). By default glibc maps the large
    buffers apart and gives the heap's free memory back, so the next step faults their pages in
    again; with the settings the heap keeps all of it, the 48 MiB buffer too. Measured as the
    heap's size (``mallinfo2``'s ``arena``), which huge pages do not change as they change the
    page faults."""
    if not hasattr(ctypes.CDLL("libc.so.6"), "mallinfo2"):
        pytest.skip("mallinfo2 came with glibc 2.33")
    environ = {
        name: value for name, value in os.environ.items()
        if name not in (*glibc_heap.GLIBC_VARIABLES, glibc_heap.VARIABLE, "GLIBC_TUNABLES",
                        "LD_PRELOAD")
    }
    result = subprocess.run(
        [sys.executable, "-c", CHILD, switches.__file__, glibc_heap.__file__], env=environ,
        capture_output=True, text=True, check=True, timeout=120,
    )
    heap = json.loads(result.stdout.strip().splitlines()[-1])
    assert heap["kept"]
    assert heap["after"] >= 190 > 2 * heap["default"], heap
