"""The XLA flags benchmark: what it reads from XLA's dump, and a tiny run of two flag sets
(slow); bad arguments: test_bad_arguments.py."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.backend import child_env

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "bench_xla_flags.py"
sys.path.insert(0, str(SCRIPT.parent))
import bench_xla_flags as bench  # noqa: E402

HLO = (
    (
        "%fused_convolution = f32[8,80,80,64] fusion(%p0, %p1), kind=kCustom, calls=%c, "
        'backend_config={"fusion_backend_config":{"kind":"__ynn_fusion"}}\n'
    )
    + """\
%convolution.3 = f32[8,40,40,64]{3,2,1,0} convolution(%a, %b), window={size=3x3}
%cc = f32[8,40,40,64] custom-call(%a, %b), custom_call_target="__onednn$convolution"
%add = f32[8] add(%x, %y)
"""
)


def test_markers_are_counted_in_the_optimised_programs_only(tmp_path):
    (tmp_path / "module_0001.jit_step.cpu_after_optimizations.txt").write_text(HLO + HLO)
    (tmp_path / "module_0001.jit_step.before_optimizations.txt").write_text(HLO)
    counts = bench.count_markers(tmp_path)
    assert counts == {"YNNPACK fusions": 2, "oneDNN calls": 2, "convolutions": 2}
    assert bench.count_markers(tmp_path / "missing") == dict.fromkeys(bench.MARKERS, 0)


@pytest.mark.slow
def test_a_tiny_run_times_each_flag_set_and_reads_what_xla_compiled(tmp_path):
    output = tmp_path / "xla_flags.json"
    command = [sys.executable, str(SCRIPT), "--flags=none,ynn", "--models=resnet_rs50"]
    command += ["--size=32", "--batch=1", "--no-detection", "--no-tensorflow", "--repeats=1"]
    result = subprocess.run(
        [*command, f"--output={output}"],
        capture_output=True,
        text=True,
        timeout=1200,
        env=child_env(),
    )
    assert result.returncode == 0, result.stderr[-2000:]
    tables = json.loads(output.read_text())["tables"]
    steps, compiled = tables["steps"], tables["compiled"]
    assert steps["columns"] == ["step", "jax", "jax ynn"]
    assert [row[0] for row in steps["rows"]] == ["resnet_rs50 train", "resnet_rs50 predict"]
    assert all(cell > 0 for row in steps["rows"] for cell in row[1:])
    assert [row[0].split(":")[0] for row in compiled["rows"]] == ["jax", "jax ynn"]
    # Every program XLA compiled was dumped: each run compiled convolutions, of one kind or other.
    assert all(sum(row[1:]) > 0 for row in compiled["rows"]), compiled["rows"]
