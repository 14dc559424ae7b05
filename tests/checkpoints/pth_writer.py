"""Writes ``torch.save``-format checkpoints without PyTorch, for tests: full-size synthetic
state dicts (a Mask R-CNN's, served to the registry), big-endian files and damaged ones.

The pickles name the same globals and persistent ids ``torch.save`` writes (protocol 2,
``torch._utils._rebuild_tensor_v2``, ``torch.<Type>Storage``); ``test_pytorch.py`` checks that
``torch.load`` reads what this writes where PyTorch is installed.
"""

from __future__ import annotations

import collections
import dataclasses
import io
import pickle
import struct
import zipfile
from pathlib import Path

import numpy as np

STORAGE_TYPES = {
    "float32": "FloatStorage",
    "float64": "DoubleStorage",
    "float16": "HalfStorage",
    "int64": "LongStorage",
    "int32": "IntStorage",
    "uint8": "ByteStorage",
    "bool": "BoolStorage",
}
MAGIC_NUMBER = 0x1950A86A20F9469CFC6C


@dataclasses.dataclass(frozen=True)
class Global:
    """A name the pickle refers to (written as a GLOBAL opcode, never imported here)."""

    module: str
    name: str

    def __call__(self, *args):  # pickle's save_reduce asks for a callable; never called
        raise NotImplementedError(f"{self.module}.{self.name}")


class Storage:
    """A storage: its values, written once however many tensors view it."""

    def __init__(self, values: np.ndarray):
        self.values = np.ascontiguousarray(values).reshape(-1)


@dataclasses.dataclass
class Tensor:
    """A tensor to write: a view of ``storage`` (an array becomes a storage of its own) with
    ``size``/``stride``/``offset`` defaulting to the whole array, contiguous; set them to
    describe other views, damaged ones too."""

    storage: Storage | np.ndarray
    size: tuple | None = None
    stride: tuple | None = None
    offset: int = 0
    rebuild: Global = Global("torch._utils", "_rebuild_tensor_v2")

    def __reduce__(self):
        storage = self.storage
        size = self.size
        if not isinstance(storage, Storage):
            size = storage.shape if size is None else size
            storage = Storage(storage)
        size = storage.values.shape if size is None else tuple(size)
        stride = self.stride
        if stride is None:
            stride = tuple(int(np.prod(size[i + 1 :])) for i in range(len(size)))
        args = (storage, self.offset, tuple(size), tuple(stride), False, collections.OrderedDict())
        return self.rebuild, args


class _Pickler(pickle._Pickler):
    def __init__(self, file, storages: list, legacy: bool):
        super().__init__(file, protocol=2)
        self.storages, self.legacy = storages, legacy
        self.keys: dict[int, str] = {}

    def save(self, obj, save_persistent_id=True):
        if isinstance(obj, Global):
            self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode())
            return
        super().save(obj, save_persistent_id)

    def persistent_id(self, obj):
        if not isinstance(obj, Storage):
            return None
        if id(obj) not in self.keys:
            self.keys[id(obj)] = str(len(self.storages))
            self.storages.append(obj)  # kept alive: its id stays its own
        storage_type = Global("torch", STORAGE_TYPES[str(obj.values.dtype)])
        fields = ("storage", storage_type, self.keys[id(obj)], "cpu", int(obj.values.size))
        return fields + (None,) if self.legacy else fields


def pickled(obj, legacy: bool = False) -> tuple[bytes, list[np.ndarray]]:
    """``obj``'s pickle as ``torch.save`` writes it and the :class:`Storage` objects it names,
    in key order."""
    buffer, storages = io.BytesIO(), []
    _Pickler(buffer, storages, legacy).dump(obj)
    return buffer.getvalue(), storages


def write_pth(path: Path, obj, *, legacy: bool = False, byteorder: str = "little") -> Path:
    """``obj`` (containers of :class:`Tensor`, or arrays, which become whole tensors) written
    in the zip format (``legacy=False``, in ``byteorder``) or the sequential one (whose
    storages torch writes little-endian on every machine)."""
    obj = _tensors(obj)
    data, storages = pickled(obj, legacy)
    order = "<" if byteorder == "little" or legacy else ">"  # sequential: little-endian always
    raw = [s.values.astype(s.values.dtype.newbyteorder(order)).tobytes() for s in storages]
    if legacy:
        with open(path, "wb") as f:
            for value in (MAGIC_NUMBER, 1001, {"little_endian": byteorder == "little"}):
                pickle.dump(value, f, protocol=2)
            f.write(data)
            pickle.dump([str(i) for i in range(len(storages))], f, protocol=2)
            for storage, values in zip(storages, raw, strict=True):
                f.write(struct.pack(f"{order}q", storage.values.size) + values)
        return path
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("archive/data.pkl", data)
        archive.writestr("archive/byteorder", byteorder)
        for key, values in enumerate(raw):
            archive.writestr(f"archive/data/{key}", values)
        archive.writestr("archive/version", "3\n")
    return path


def _tensors(obj):
    if isinstance(obj, np.ndarray):
        return Tensor(obj)
    if isinstance(obj, dict):
        return type(obj)((k, _tensors(v)) for k, v in obj.items())
    if isinstance(obj, (list, tuple)):
        return type(obj)(_tensors(v) for v in obj)
    return obj
