"""One benchmark column per process: the environment of a child and the JSON it prints last;
and the project's scripts run as a user runs them."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable


def child_env(keras_backend: str, threads: int, **extra: str) -> dict[str, str]:
    """This environment with ``KERAS_BACKEND`` and ``threads`` threads for every library."""
    return {
        **os.environ,
        "TF_CPP_MIN_LOG_LEVEL": "2",
        "KERAS_BACKEND": keras_backend,
        "TF_NUM_INTRAOP_THREADS": str(threads),
        "TF_NUM_INTEROP_THREADS": "1",
        "OMP_NUM_THREADS": str(threads),
        **extra,
    }


def run_json_child(column: str, command: list[str], env: dict[str, str]) -> dict:
    """Run ``command``; the JSON object on its last line, or ``{}`` (said on stderr) if it
    failed, so that the other columns still make their table."""
    print(f"timing {column} ...", file=sys.stderr, flush=True)
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        print(f"{column} failed: {last}", file=sys.stderr, flush=True)
        return {}
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_columns(
    script: str,
    columns: list[str],
    argv: list[str],
    threads: int,
    backend_of: Callable[[str], str],
    write_so_far: Callable[[dict], None],
    extra_env: dict[str, str] | None = None,
) -> dict[str, dict]:
    """One child process of ``script`` per column, in order (``argv`` less ``--output``, with
    ``--child=<column>`` and a ``--workdir`` all the children share): ``{column: its JSON}``.
    ``extra_env`` is added to every child's environment (the same for every column).
    After each column but the last, ``write_so_far(results)`` runs with its printing silenced:
    a run stopped midway keeps the columns it measured."""
    results: dict[str, dict] = {}
    passed = [a for a in argv if not a.startswith("--output")]
    with tempfile.TemporaryDirectory() as workdir:
        for column in columns:
            command = [sys.executable, os.path.abspath(script), *passed]
            command += [f"--child={column}", f"--workdir={workdir}"]
            env = child_env(backend_of(column), threads, **(extra_env or {}))
            results[column] = run_json_child(column, command, env)
            if column != columns[-1]:
                with contextlib.redirect_stdout(io.StringIO()):
                    write_so_far(dict(results))
    return results


def run_script(command: list[str], what: str) -> tuple[str, float]:
    """Run one of the project's scripts as a user would (its ``--backend`` flag, not an
    inherited ``KERAS_BACKEND``, picks the backend; TensorFlow's start-up lines quiet):
    ``(its standard output, wall-clock seconds)``.

    Raises:
        RuntimeError: it failed; ``what`` and the end of its error output are in the message.
    """
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    env.pop("KERAS_BACKEND", None)
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed:\n{done.stderr[-3000:]}")
    return done.stdout, seconds
