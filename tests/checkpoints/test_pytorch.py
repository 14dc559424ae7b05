"""PyTorch checkpoints read without PyTorch: equal to ``torch.load`` on files torch wrote in
both formats (committed fixtures, ``make_fixtures.py``), malicious and damaged files refused
before anything is imported or loaded."""

import json
import os
import pickle
import subprocess
import sys
import zipfile
from collections import OrderedDict
from pathlib import Path

import numpy as np
import pytest

from lambda_keras.checkpoints import read_checkpoint
from lambda_keras.checkpoints.pytorch import MAGIC_NUMBER, UnsafeCheckpointError, load_pytorch
from tests.checkpoints.pth_writer import Global, Storage, Tensor, pickled, write_pth

FIXTURES = Path(__file__).with_name("fixtures")
FORMATS = ("zip_format.pth", "sequential_format.pth")


def expected() -> dict[str, np.ndarray]:
    with np.load(FIXTURES / "expected.npz") as saved:
        return {key: saved[key] for key in saved.files}


def entry(obj, key: str):
    for part in key.split("/"):
        obj = obj[int(part)] if isinstance(obj, list) else obj[part]
    return obj


@pytest.mark.parametrize("name", FORMATS)
def test_each_tensor_equals_what_torch_load_read(name, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` would raise
    obj = load_pytorch(FIXTURES / name)
    for key, value in expected().items():
        got = entry(obj, key)
        assert got.dtype == value.dtype and got.shape == value.shape, key
        np.testing.assert_array_equal(got, value, err_msg=key)
    assert isinstance(obj["model"], OrderedDict)
    assert list(obj["model"]) == [k.split("/")[1] for k in expected() if k.startswith("model/")]
    assert {k: obj[k] for k in ("epoch", "name", "raw", "pair")} == {
        "epoch": 3,
        "name": "fixture",
        "raw": b"\x00\xff",
        "pair": (1, 2.5),
    }


def test_views_keep_their_layout():
    """The fixtures' views: slices of one storage at offsets, a transpose, stride 0."""
    model = load_pytorch(FIXTURES / "zip_format.pth")["model"]
    np.testing.assert_array_equal(model["first"], np.arange(2, 8, dtype="float32"))
    np.testing.assert_array_equal(model["second"], np.arange(10, 24, dtype="float32").reshape(2, 7))
    assert (
        model["expanded"].shape == (3, 4) and (model["expanded"] == model["expanded"][:, :1]).all()
    )
    assert model["steps"].shape == () and model["steps"] == 7 and model["empty"].shape == (0, 3)


def test_read_checkpoint_unwraps_the_state_and_gives_float32(tmp_path):
    state = {"w": np.arange(3, dtype="float16"), "n": np.array(7, "int64"), "b": np.ones(2, bool)}
    path = write_pth(tmp_path / "s.pth", {"model": state, "epoch": 1}, legacy=True)
    read = read_checkpoint(path)
    assert set(read) == set(state) and all(v.dtype == np.float32 for v in read.values())
    np.testing.assert_array_equal(read["n"], np.float32(7))
    listed = write_pth(tmp_path / "list.pth", [np.ones(2, "float32")])
    with pytest.raises(ValueError, match="holds a list, not a state dict"):
        read_checkpoint(listed)
    with pytest.raises(ValueError, match="tensor 'complex64' is complex"):
        read_checkpoint(FIXTURES / "zip_format.pth")


@pytest.mark.parametrize("legacy", [False, True])
@pytest.mark.parametrize("byteorder", ["little", "big"])
def test_written_files_read_back(tmp_path, legacy, byteorder):
    shared = Storage(np.arange(10, dtype="float32"))
    state = {
        "a": np.arange(6, dtype="float64").reshape(2, 3),
        "b": Tensor(shared, (3,), offset=2),
        "c": Tensor(shared, (2, 2), (1, 2), 1),
    }
    path = write_pth(tmp_path / "w.pth", {"state_dict": state}, legacy=legacy, byteorder=byteorder)
    got = load_pytorch(path)["state_dict"]
    np.testing.assert_array_equal(got["a"], state["a"])
    np.testing.assert_array_equal(got["b"], [2, 3, 4])
    np.testing.assert_array_equal(got["c"], [[1, 3], [2, 4]])


# ------------------------------------------------------------------ refused: code, damage
def malicious_pickle(marker: Path) -> bytes:
    class Payload:
        def __reduce__(self):
            return os.system, (f"touch {marker}",)

    return pickle.dumps({"weight": Payload()}, protocol=2)


def replace_record(path: Path, name: str, data: bytes) -> Path:
    with zipfile.ZipFile(path) as archive:
        records = {n: archive.read(n) for n in archive.namelist()}
    records[name] = data
    with zipfile.ZipFile(path, "w") as archive:
        for n, value in records.items():
            archive.writestr(n, value)
    return path


def sequential_file(path: Path, *pickles: bytes) -> Path:
    path.write_bytes(b"".join(pickles))
    return path


def test_a_pickle_that_runs_code_is_refused_in_both_formats(tmp_path):
    marker = tmp_path / "ran"
    zipped = write_pth(tmp_path / "z.pth", {"w": np.ones(1, "float32")})
    replace_record(zipped, "archive/data.pkl", malicious_pickle(marker))
    head = [pickle.dumps(v, protocol=2) for v in (MAGIC_NUMBER, 1001, {})]
    sequential = sequential_file(tmp_path / "s.pth", *head, malicious_pickle(marker))
    first = sequential_file(tmp_path / "f.pth", malicious_pickle(marker))  # instead of the magic
    for path in (zipped, sequential, first):
        with pytest.raises(UnsafeCheckpointError, match=r"names posix\.system.*not imported"):
            read_checkpoint(path)
    assert not marker.exists()


def test_state_set_on_anything_but_an_ordered_dict_is_refused(tmp_path):
    class Stateful:
        def __reduce__(self):
            return set, ([],), {"attribute": 1}

    path = write_pth(tmp_path / "z.pth", {"w": np.ones(1, "float32")})
    replace_record(path, "archive/data.pkl", pickle.dumps(Stateful(), protocol=2))
    with pytest.raises(UnsafeCheckpointError, match="sets the state of a set"):
        load_pytorch(path)


def test_a_tensor_beyond_its_storage_is_refused(tmp_path):
    storage = Storage(np.ones(4, "float32"))
    for tensor in (Tensor(storage, (5,)), Tensor(storage, (2, 2), (2, 1), 1)):
        path = write_pth(tmp_path / "oob.pth", {"w": tensor})
        with pytest.raises(ValueError, match="reaches element .* of a storage of 4: damaged"):
            load_pytorch(path)
    negative = write_pth(tmp_path / "neg.pth", {"w": Tensor(storage, (2,), (-1,), 3)})
    with pytest.raises(ValueError, match="non-negative ints"):
        load_pytorch(negative)


def test_damaged_files_are_refused(tmp_path):
    state = {"w": np.ones(8, "float32")}
    zipped = write_pth(tmp_path / "z.pth", state)
    replace_record(zipped, "archive/data/0", b"\x00" * 12)
    with pytest.raises(ValueError, match="has 12 bytes; its 8 float32 elements need 32"):
        load_pytorch(zipped)
    sequential = write_pth(tmp_path / "s.pth", state, legacy=True)
    sequential.write_bytes(sequential.read_bytes()[:-3])
    with pytest.raises(ValueError, match="truncated"):
        load_pytorch(sequential)
    noise = tmp_path / "noise.pth"
    noise.write_bytes(np.random.default_rng(0).bytes(1000))
    with pytest.raises(ValueError, match="not a PyTorch checkpoint"):
        read_checkpoint(noise)
    other_zip = tmp_path / "other.pth"
    with zipfile.ZipFile(other_zip, "w") as archive:
        archive.writestr("notes.txt", "hello")
    with pytest.raises(ValueError, match="zip file but not a torch.save checkpoint"):
        load_pytorch(other_zip)


def test_an_unknown_persistent_id_is_refused(tmp_path):
    data, _ = pickled({"w": Tensor(np.ones(2, "float32"))})
    data = data.replace(b"storage", b"module!")  # same length: another persistent id type
    path = replace_record(write_pth(tmp_path / "z.pth", {}), "archive/data.pkl", data)
    with pytest.raises(UnsafeCheckpointError, match="Unknown persistent id"):
        load_pytorch(path)


def test_a_storage_type_that_is_not_one_is_refused(tmp_path):
    bad = Global("torch", "cuda")
    data, _ = pickled({"w": Tensor(np.ones(2, "float32"), rebuild=bad)})
    path = replace_record(write_pth(tmp_path / "z.pth", {}), "archive/data.pkl", data)
    with pytest.raises(UnsafeCheckpointError, match=r"names torch\.cuda"):
        load_pytorch(path)


# ------------------------------------------------------------------ against torch itself
TORCH_LOAD = """
import json, sys
import numpy as np
import torch
paths, out = json.loads(sys.argv[1]), sys.argv[2]
arrays = {}
for i, path in enumerate(paths):
    state = torch.load(path, weights_only=True)
    state = state.get("model", state.get("state_dict", state))
    for key, value in state.items():
        if isinstance(value, torch.Tensor):
            arrays[f"{i}/{key}"] = value.detach().float().numpy()
np.savez(out, **arrays)
"""


def torch_load(paths: list[Path], out: Path) -> dict[str, np.ndarray]:
    """``torch.load`` of each file in a process of its own (PyTorch before TensorFlow)."""
    command = [sys.executable, "-c", TORCH_LOAD, json.dumps([str(p) for p in paths]), str(out)]
    subprocess.run(command, check=True, capture_output=True, timeout=600)
    with np.load(out) as saved:
        return {key: saved[key] for key in saved.files}


@pytest.mark.torch
def test_torch_reads_what_the_writer_writes_as_this_reader_does(tmp_path):
    rng = np.random.default_rng(0)
    state = {"conv": rng.normal(size=(4, 3, 3, 3)).astype("float32"), "n": np.array(3, "int64")}
    paths = [
        write_pth(tmp_path / f"{legacy}_{order}.pth", state, legacy=legacy, byteorder=order)
        for legacy in (False, True)
        for order in ("little", "big")
    ]
    paths += [FIXTURES / name for name in FORMATS]
    reference = torch_load(paths, tmp_path / "torch.npz")
    for i, path in enumerate(paths):
        ours = load_pytorch(path)
        ours = ours.get("model", ours)
        for key, value in ours.items():
            value = value.astype("float32")  # as the script's .float()
            np.testing.assert_array_equal(value, reference[f"{i}/{key}"], err_msg=f"{path}:{key}")
        assert len(ours) == sum(k.startswith(f"{i}/") for k in reference)


WRITE_REAL_SIZE = """
import sys
import torch, torchvision
model = torchvision.models.detection.maskrcnn_resnet50_fpn(weights=None, weights_backbone=None)
torch.save(model.state_dict(), sys.argv[1])
torch.save(model.state_dict(), sys.argv[2], _use_new_zipfile_serialization=False)
"""


@pytest.mark.slow
@pytest.mark.torch("torchvision")
def test_a_real_size_checkpoint_equals_torch_load_in_both_formats(tmp_path):
    """torchvision's Mask R-CNN state dict (44.4M parameters, 170 MB) as torch.save writes it."""
    paths = [tmp_path / "zip.pth", tmp_path / "sequential.pth"]
    subprocess.run(
        [sys.executable, "-c", WRITE_REAL_SIZE, *map(str, paths)], check=True, timeout=600
    )
    reference = torch_load(paths, tmp_path / "torch.npz")
    for i, path in enumerate(paths):
        ours = read_checkpoint(path)
        assert len(ours) == sum(k.startswith(f"{i}/") for k in reference) > 300
        for key, value in ours.items():
            np.testing.assert_array_equal(value, reference[f"{i}/{key}"], err_msg=key)
