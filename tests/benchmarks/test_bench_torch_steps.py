"""The PyTorch steps benchmark prints timm's row and Keras' eager row with the ratio to timm and
writes their kernels with ``--profile`` (needs PyTorch and timm); the compiled row, which
compiles for minutes, under ``-m slow``."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "bench_torch_steps.py"


def run(tmp_path, *systems: str, options: tuple[str, ...] = ()) -> dict:
    output = tmp_path / "steps.json"
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--batch=2", "--size=32", "--steps=1", "--systems",
         *systems, f"--output={output}", *options],
        capture_output=True,
        text=True,
        timeout=1200,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONPATH": str(ROOT)},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(output.read_text())["tables"]["torch_steps"]


@pytest.mark.torch("timm")
def test_timm_and_keras_eager_rows_with_the_ratio_and_their_kernels(tmp_path):
    table = run(tmp_path, "timm", "eager", options=(f"--profile={tmp_path / 'kernels'}",))
    assert table["notes"] == []
    timm, eager = table["rows"]
    assert timm[:2] == ["lambda_resnet50ts", "timm"] and timm[4:6] == [1.0, 1.0]
    assert eager[1] == "eager" and eager[2] > 0 and eager[3] > 0
    assert eager[4] == pytest.approx(timm[2] / eager[2])  # step time as a multiple of timm's
    assert eager[8:10] == [None, None]  # no graphs counted for Keras' eager steps
    import torch

    gpu = torch.cuda.is_available()  # kernels on a GPU only; page faults a column on a CPU only
    assert table["columns"][-1] == ("graph breaks" if gpu else "page faults / train step")
    assert gpu or all(row[10] > 0 for row in (timm, eager))  # page faults of a training step
    for system in ("timm", "eager"):
        text = (tmp_path / "kernels" / f"profile_lambda_resnet50ts_{system}.txt").read_text()
        assert text.startswith("## training step\nper step: ") and "## inference step\n" in text
    kernels = json.loads((tmp_path / "steps.json").read_text())["tables"]["kernels"]
    assert [row[:3] for row in kernels["rows"]] == [
        ["lambda_resnet50ts", system, kind] for system in ("timm", "eager")
        for kind in ("training", "inference")
    ]
    for row in kernels["rows"]:
        wall, count, kernel_ms, operators, convolutions = row[3:]
        assert wall > 0 and (count > 0 if gpu else [count, kernel_ms] == [0, 0])
        assert 0 < convolutions < operators  # the models' convolutions, and the rest


@pytest.mark.slow
@pytest.mark.torch("timm")
def test_the_compiled_row_counts_one_graph_per_step_and_no_break(tmp_path):
    table = run(tmp_path, "compiled")
    (row,) = table["rows"]
    assert row[1] == "compiled" and row[8:10] == [2, 0]
    assert row[6] > row[7] > 0  # the first steps compile
    import platform

    import torch

    from lambda_keras.backend import glibc_heap
    from lambda_keras.backend.switches import read_switch

    kept = (
        platform.libc_ver()[0] == "glibc" and not torch.cuda.is_available()
        and read_switch(os.environ, glibc_heap.VARIABLE, "1", "1 or 0")
        and not glibc_heap._user_set(os.environ)
    )
    if kept:  # the compiled steps kept glibc's buffers in its heap, and the table says so
        assert table["notes"] == [
            "lambda_resnet50ts compiled: glibc's large buffers kept in its heap by the compiled "
            "steps (lambda_keras.backend.glibc_heap)"
        ]


def fake_children(monkeypatch, device="cpu", seen=None):
    """bench_torch_steps with each row's process faked: a row of fixed figures (a compiled row
    with its graphs and glibc's note), the environment each row got appended to ``seen``, and
    ``device`` as the machine's accelerator."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import bench_torch_steps

    real_run = subprocess.run

    def fake_run(command, *args, env=None, **options):
        if "--child" not in command:  # git, for the results file's provenance
            return real_run(command, *args, env=env, **options)
        if seen is not None:
            seen.append({k: env.get(k) for k in bench_torch_steps.GLIBC_HEAP})
        compiled = "compiled" in command[-1]
        row = {"train": 1.0, "infer": 2.0, "first_train": 1.0, "first_infer": None,
               "faults": 3, **({"graphs": 2, "breaks": 0, "glibc_heap": True} if compiled else {})}
        return subprocess.CompletedProcess(command, 0, stdout=json.dumps(row), stderr="")

    monkeypatch.setattr(bench_torch_steps.subprocess, "run", fake_run)
    monkeypatch.setattr(bench_torch_steps, "device_name", lambda: device)
    return bench_torch_steps


@pytest.mark.torch()  # the title names PyTorch's version
def test_glibc_heap_runs_each_row_with_the_allocator_settings_and_says_so(monkeypatch, tmp_path):
    """``--glibc-heap``: each row's process gets GLIBC_HEAP's variables, and the title says so."""
    seen = []
    bench_torch_steps = fake_children(monkeypatch, seen=seen)
    output = tmp_path / "heap.json"
    bench_torch_steps.main(["--systems", "timm", "--glibc-heap", f"--output={output}"])
    bench_torch_steps.main(["--systems", "timm", f"--output={tmp_path / 'default.json'}"])
    assert seen == [bench_torch_steps.GLIBC_HEAP, dict.fromkeys(bench_torch_steps.GLIBC_HEAP)]
    table = json.loads(output.read_text())["tables"]["torch_steps"]
    assert "glibc's large buffers kept in its heap (--glibc-heap)" in table["title"]
    assert table["rows"][0][-1] == 3


@pytest.mark.torch()  # the title names PyTorch's version
def test_a_compiled_row_that_kept_glibc_s_buffers_says_so(monkeypatch, tmp_path):
    bench_torch_steps = fake_children(monkeypatch)
    output = tmp_path / "steps.json"
    bench_torch_steps.main(["--systems", "timm", "compiled", f"--output={output}"])
    table = json.loads(output.read_text())["tables"]["torch_steps"]
    assert table["notes"] == [
        "lambda_resnet50ts compiled: glibc's large buffers kept in its heap by the compiled steps "
        "(lambda_keras.backend.glibc_heap)"
    ]


@pytest.mark.torch()  # the title names PyTorch's version
def test_page_faults_are_a_column_on_a_cpu_only(monkeypatch, tmp_path):
    """The host's page faults per training step: what a CPU's step time turns on; a GPU's table
    leaves the column out (its steps keep their tensors on the device)."""
    tables = {}
    for device in ("cpu", "1 x NVIDIA H200"):
        bench_torch_steps = fake_children(monkeypatch, device)
        output = tmp_path / f"{len(tables)}.json"
        bench_torch_steps.main(["--systems", "timm", f"--output={output}"])
        tables[device] = json.loads(output.read_text())["tables"]["torch_steps"]
    cpu, gpu = tables["cpu"], tables["1 x NVIDIA H200"]
    assert cpu["columns"][-1] == bench_torch_steps.PAGE_FAULTS and cpu["rows"][0][-1] == 3
    assert gpu["columns"] == cpu["columns"][:-1] and gpu["rows"][0] == cpu["rows"][0][:-1]
