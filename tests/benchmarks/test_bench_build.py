"""The build benchmark: each cell the median of fresh processes, a failed process said, and a
run on JAX that writes its table (a weights file loaded, random initial values)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.backend import child_env

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_build.py"
sys.path.insert(0, str(SCRIPT.parent))
import bench_build  # noqa: E402
from results import Table  # noqa: E402


def table() -> Table:
    columns = [
        "model",
        "backend",
        "import (s)",
        "ready (s)",
        "first detect (s)",
        "second detect (s)",
    ]
    return Table("build", "title", columns, labels=2)


def test_a_cell_is_the_median_of_the_processes_that_finished_and_says_so():
    runs = [{"import": 1.0, "ready": 4.0}, {}, {"import": 3.0, "ready": 2.0}]
    assert bench_build.median_cells(runs) == {"import": 2.0, "ready": 3.0}
    built = table()
    bench_build.add_row(built, "resnet_rs50", "jax", runs)
    assert built.rows == [["resnet_rs50", "jax", 2.0, 3.0, None, None]]
    assert built.notes == ["resnet_rs50 on jax: the median of 2 of 3 processes."]
    bench_build.add_row(built, "resnet_rs50", "torch", [{}, {}])
    assert built.rows[-1] == ["resnet_rs50", "torch", "failed", None, None, None]


@pytest.mark.end_to_end
def test_a_run_on_jax_times_a_weights_file_and_random_values(tmp_path):
    output = tmp_path / "build.json"
    command = [sys.executable, str(SCRIPT), "--backends=jax", "--repeats=1"]
    command += ["--models=lambda_resnet50ts,resnet_rs50", f"--output={output}"]
    done = subprocess.run(command, capture_output=True, text=True, env=child_env(), timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads(output.read_text())["tables"]["build"]["rows"]
    assert [row[:2] for row in rows] == [["lambda_resnet50ts", "jax"], ["resnet_rs50", "jax"]]
    for row in rows:
        assert all(isinstance(cell, float) and cell > 0 for cell in row[2:4]), rows
        assert row[4:] == [None, None]  # detect: the Mask R-CNN's rows only
