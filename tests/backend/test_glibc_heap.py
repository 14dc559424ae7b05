"""glibc_heap: glibc's mmap and trim thresholds set once per process unless the user chose
(``LAMBDA_KERAS_GLIBC_HEAP=0``, glibc's own variables) or the C library is another; a bad value
of the switch is a ValueError; in a child process on this machine's glibc, buffers freed and
allocated again stop faulting their pages in once it ran."""

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from lambda_keras.backend import glibc_heap

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def fresh(monkeypatch):
    """The module as in a process where nothing was set yet, and a ``mallopt`` that records."""
    monkeypatch.setattr(glibc_heap, "_applied", None)
    calls = []

    def mallopt(parameter: int, value: int) -> int:
        calls.append((parameter, value))
        return 1

    return calls, mallopt


def test_sets_both_thresholds_once_per_process(fresh):
    calls, mallopt = fresh
    assert glibc_heap.applied() is None
    assert glibc_heap.keep_buffers_in_heap({}, mallopt, "glibc")
    # M_MMAP_THRESHOLD is -3 and M_TRIM_THRESHOLD -1 in <malloc.h>.
    assert calls == [(-3, 32 * 1024 * 1024), (-1, 2**31 - 1)]
    assert glibc_heap.applied() == {"M_MMAP_THRESHOLD": 2**25, "M_TRIM_THRESHOLD": 2**31 - 1}
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
    ],
)
def test_the_user_s_choice_wins(fresh, environ):
    calls, mallopt = fresh
    assert not glibc_heap.keep_buffers_in_heap(environ, mallopt, "glibc")
    assert calls == [] and glibc_heap.applied() is None


def test_tunables_of_other_parts_of_glibc_are_not_a_choice(fresh):
    calls, mallopt = fresh
    environ = {"GLIBC_TUNABLES": "glibc.pthread.rseq=0", "LAMBDA_KERAS_GLIBC_HEAP": "1"}
    assert glibc_heap.keep_buffers_in_heap(environ, mallopt, "glibc")
    assert len(calls) == 2


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
import json, resource, sys
import numpy as np
from lambda_keras.backend import glibc_heap

def step():
    # Like a compiled step: buffers of a few MiB allocated, written, then all freed at once.
    buffers = [np.ones(3 * 2**20 // 8 * (1 + index % 3)) for index in range(24)]
    del buffers

def faults():
    step()  # glibc settles its thresholds
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(3):
        step()
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

default = faults()
kept = glibc_heap.keep_buffers_in_heap()
print(json.dumps({"default": default, "kept": kept, "after": faults()}))
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's allocator only")
def test_on_this_glibc_freed_buffers_stay_in_the_heap():
    """About 144 MiB allocated and freed at once, three times: by default glibc gives the heap's
    free memory back and the next step faults its pages in again (one fault per 4 KiB page;
    36,915 faults here on glibc 2.36); with the settings, none (0 here)."""
    environ = {
        name: value for name, value in os.environ.items()
        if name not in (*glibc_heap.GLIBC_VARIABLES, glibc_heap.VARIABLE, "GLIBC_TUNABLES")
    }
    result = subprocess.run(
        [sys.executable, "-c", CHILD], cwd=ROOT, env=environ, capture_output=True, text=True,
        check=True, timeout=120,
    )
    counts = json.loads(result.stdout.strip().splitlines()[-1])
    assert counts["kept"]
    assert counts["default"] > 10_000, counts
    assert counts["after"] < counts["default"] / 100, counts
