"""The lambda layer's operator counts on PyTorch (benchmarks/bench_layer_ops.py): one row per
implementation and timm's, the backward pass adding operators, fewer of them computing than
dispatched, and fewer operators than before the position index became a constant and eager
batch norms took PyTorch's kernels (needs PyTorch and timm)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.torch("timm")
def test_each_implementation_and_timm_s_layer_get_their_counts(tmp_path):
    output = tmp_path / "ops.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_layer_ops.py"), "--size=6",
         "--channels=16", "--scope=3", f"--output={output}"],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    table = json.loads(output.read_text())["tables"]["ops"]
    names = [row[0] for row in table["rows"]]
    assert names == [f"LambdaLayer {i}" for i in ("einsum", "conv", "depthwise")] + [
        "timm LambdaLayer"
    ]
    for name, forward, both, computing, both_computing, calls in table["rows"]:
        assert 0 < forward < both and calls > 0, name
        assert 0 < computing < forward and computing < both_computing < both, name
    einsum = table["rows"][0]
    # The position index is one constant and batch norm's empty-batch guard is left out: the
    # einsum forward pass dispatched 261 operators before, 143 after (at this size as at c4's);
    # with eager batch norms as PyTorch's kernels and a lerp for each moving statistic, 97 (of
    # them 32 compute, where there were 50).
    assert einsum[1] < 110 and einsum[3] < 40
