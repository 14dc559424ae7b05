"""Each failure's report written to a file as it happens, for runs that a time limit may stop
before pytest prints its summary (``benchmarks/torch_gpu.sh`` on a lent GPU): with
``LAMBDA_KERAS_FAILURES_FILE=<path>`` set, the test's id, the phase that failed and pytest's
report are appended to ``<path>``. With pytest-xdist the main process writes what its workers
report, once. tests/conftest.py loads it; ``-p tests.failures_file`` elsewhere."""

import os

VARIABLE = "LAMBDA_KERAS_FAILURES_FILE"


def pytest_runtest_logreport(report) -> None:
    path = os.environ.get(VARIABLE)
    if not path or not report.failed or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    with open(path, "a", encoding="utf-8") as file:
        file.write(f"FAILED {report.nodeid} ({report.when})\n{report.longreprtext}\n\n")
