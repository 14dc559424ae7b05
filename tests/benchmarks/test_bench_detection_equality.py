"""The equality benchmark reads equivalence.py's summary lines into one row per route."""

import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
import bench_detection_equality as bench  # noqa: E402
import results  # noqa: E402

sys.path.remove(str(BENCHMARKS))

# As tests/detection/torchvision/equivalence.py's print_comparison writes them.
STDOUT = """backend=tensorflow lowest scores kept: 0.31
detect_summary photo=china shape=(427, 640) torchvision=90 keras=90 matched=90
detect_summary matched_share=1.0000 torchvision=497 keras=497 matched=497 paste_box_flips=0 \
max_box_diff=0.0045 max_score_diff=0.000101 max_mask_pixels_differing=1.5e-05
litert_summary matched_share=0.9980 torchvision=497 keras=496 matched=496 paste_box_flips=1 \
max_box_diff=0.0032 max_score_diff=0.000113 max_mask_pixels_differing=1.5e-05
"""


def test_the_summary_lines_become_rows_in_route_order():
    found = bench.summaries(STDOUT)
    assert sorted(found) == ["detect_summary", "litert_summary"]
    table = results.Table("equality", "T", ["model", "route", "tv", "ours", "m", "b", "s", "k"])
    bench.add_rows(table, "maskrcnn_resnet50_fpn", "jax", found)
    assert [r[1] for r in table.rows] == ["detect, jax", "LiteRT (tf.lite.Interpreter)"]
    assert table.rows[1][2:5] == [497, 496, 496]
    assert table.rows[0][5:] == [0.0045, 0.000101, pytest.approx(0.0015)]  # mask share in %


def test_it_says_which_reference_is_missing(monkeypatch, capsys):
    monkeypatch.setattr(bench.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(SystemExit):
        bench.main(["--models=maskrcnn_resnet50_fpn"])
    assert "needs torch, torchvision, skimage" in capsys.readouterr().err
