"""The detection benchmark writes a row per photo and per model with a time for every column
(slow); bad arguments: test_bad_arguments.py."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.backend import child_env

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "bench_detection.py"


def _bench_detection():
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import bench_detection
    finally:
        sys.path.remove(str(SCRIPT.parent))
    return bench_detection


def test_the_size_multiple_is_the_package_s():
    from lambda_keras.detection.image_size import SIZE_MULTIPLE

    assert _bench_detection().SIZE_MULTIPLE == SIZE_MULTIPLE


@pytest.mark.slow
def test_bench_detection_times_every_backend(tmp_path):
    output = tmp_path / "detection.json"
    command = [sys.executable, str(SCRIPT), "--backends=tensorflow,jax", "--sizes=128"]
    command += ["--models=maskrcnn_resnet50_fpn,resnet_rs50", "--repeats=1", f"--output={output}"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=3000, env=child_env())
    assert result.returncode == 0, result.stderr[-2000:]
    tables = json.loads(output.read_text())["tables"]
    inference, training = tables["inference"], tables["training"]
    assert inference["columns"][-3:] == ["tensorflow", "jax", "tensorflow SavedModel"]
    photos = ["china", "flower, upright", "china, square"]
    assert [row[0] for row in inference["rows"]] == photos
    assert all(cell > 0 for row in inference["rows"] for cell in row[-3:])
    found = tables["detections"]
    assert found["columns"] == inference["columns"] and [r[0] for r in found["rows"]] == photos
    if "torchvision" in found["columns"]:  # its converted weights keep a full set everywhere
        assert all(cell == 100 for row in found["rows"] for cell in row[1:]), found["rows"]
    else:
        assert all(0 <= cell <= 100 for row in found["rows"] for cell in row[1:])
    faults = tables["page_faults"]
    assert faults["columns"] == inference["columns"][:-1]
    assert [row[0] for row in faults["rows"]] == photos
    assert all(isinstance(cell, int) and cell >= 0 for row in faults["rows"] for cell in row[1:])
    labels = [row[:2] for row in training["rows"]]
    assert labels == [["maskrcnn_resnet50_fpn, converted", 128], ["MaskRCNN, resnet_rs50", 128]]
    assert all(cell > 0 for row in training["rows"] for cell in row[-2:])
    assert "| china |" in result.stdout


def test_the_inference_tables_count_page_faults_per_column_but_the_saved_model():
    bench = _bench_detection()
    results = {
        column: {
            f"{cell} {photo}": value + index
            for index, photo in enumerate(bench.PHOTOS)
            for cell, value in (("infer", 4.0), ("found", 100), ("faults", 5000))
        }
        for column in ("torchvision", "tensorflow", "jax")
    }
    results["tensorflow"].update({f"serve {p}": 3.0 for p in bench.PHOTOS})
    results["tensorflow"].update({f"served {p}": 100 for p in bench.PHOTOS})
    inference, found, faults = bench.inference_tables(results, ["torchvision", "tensorflow", "jax"])
    columns = ["photo", "torchvision", "tensorflow", "jax"]
    assert inference.columns == [*columns, "tensorflow SavedModel"]
    assert found.columns == inference.columns
    assert faults.name == "page_faults"
    assert faults.columns == columns
    assert [row[0] for row in faults.rows] == list(bench.PHOTOS)
    assert [row[1:] for row in faults.rows] == [[5000 + i] * 3 for i in range(3)]
    assert inference.rows[1][1:] == [5.0, 5.0, 5.0, 3.0]


def test_glibc_heap_sets_the_children_s_allocator_and_says_so():
    bench = _bench_detection()
    assert bench.parse(["--glibc-heap"]).glibc_heap and not bench.parse([]).glibc_heap
    assert bench.GLIBC_KEPT["MALLOC_ARENA_MAX"] == "1"
    assert bench.GLIBC_KEPT["MALLOC_MMAP_MAX_"] == "0"
    note = bench.glibc_heap_note()
    assert all(f"{name}={value}" in note for name, value in bench.GLIBC_KEPT.items())
