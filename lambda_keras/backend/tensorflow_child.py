"""Run a module in a child process with Keras on TensorFlow: the SavedModel and LiteRT exports
of a model trained on JAX or PyTorch (the ``.keras`` file is backend-neutral, the serving graph
is TensorFlow's)."""

from __future__ import annotations

import os
import subprocess
import sys

__all__ = ["run_on_tensorflow"]


def run_on_tensorflow(module: str, args: list[str], what: str) -> None:
    """``python -m module *args`` with ``KERAS_BACKEND=tensorflow``.

    Raises:
        RuntimeError: the child failed; ``what`` and its error output are in the message.
    """
    env = {**os.environ, "KERAS_BACKEND": "tensorflow", "TF_CPP_MIN_LOG_LEVEL": "2"}
    command = [sys.executable, "-m", module, *map(str, args)]
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        how = (
            f"killed by signal {-done.returncode}"
            if done.returncode < 0
            else f"exit status {done.returncode}"
        )
        raise RuntimeError(
            f"{what} on the TensorFlow backend failed ({how}):\n{done.stderr[-3000:]}"
        )
