"""One benchmark column per process: the environment of a child and the JSON it prints last;
and the project's scripts run as a user runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time


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
