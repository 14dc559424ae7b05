"""Runs one benchmark script as ``__main__`` once per argument list, all in this one process
(the script's imports happen once, in the script's own order): ``python run_as_main.py SCRIPT
JSON_LIST_OF_ARGV`` prints one JSON object per run with its exit status and what it wrote."""

import contextlib
import io
import json
import runpy
import sys
import traceback

if __name__ == "__main__":
    script, runs = sys.argv[1], json.loads(sys.argv[2])
    for argv in runs:
        stdout, stderr = io.StringIO(), io.StringIO()
        sys.argv = [script, *argv]
        status = 0
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            try:
                runpy.run_path(script, run_name="__main__")
            except SystemExit as exit_:
                status = exit_.code if isinstance(exit_.code, int) else 1
            except BaseException:  # reported, as Python would print it
                traceback.print_exc()
                status = 1
        print(
            json.dumps({"status": status, "stdout": stdout.getvalue(), "stderr": stderr.getvalue()})
        )
