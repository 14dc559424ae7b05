"""PyTorch checkpoints (``torch.save`` files: ``.pth``, ``.pt``, ``.bin``) read into NumPy
without PyTorch.

Both formats ``torch.load`` reads are read here:

* the zip archive of PyTorch >= 1.6: ``<name>/data.pkl`` (the object, its storages named by
  persistent ids), ``<name>/data/<key>`` (one raw record per storage) and
  ``<name>/byteorder``;
* the older sequential format: pickles of the magic number, the protocol version and the
  system's sizes, then the object, then the list of storage keys, then each storage's bytes
  after its element count (torchvision's 2019 COCO checkpoints, for example).

The object is unpickled by a restricted unpickler that accepts what
``torch.load(weights_only=True)`` accepts for weights: the tensor rebuilding functions
(``torch._utils._rebuild_tensor_v2`` and its kin, parameters included), storage types and
dtypes, ``collections.OrderedDict``, ``torch.Size`` and plain Python values (dicts, lists,
tuples, sets, numbers, strings, bytes). Any other global (a class or function a pickle would
import and call, the way malicious checkpoints run code) is refused with
[UnsafeCheckpointError][lambda_keras.checkpoints.pytorch.UnsafeCheckpointError] before it is
imported. A tensor is copied out of its storage only after its offset, sizes and strides are
checked to lie inside the storage.

Examples:
    ```python
    from lambda_keras.checkpoints.pytorch import load_pytorch

    # {name: np.ndarray}
    state = load_pytorch("maskrcnn_resnet50_fpn_coco-bf2d0c1e.pth")
    ```
"""

from __future__ import annotations

import _compat_pickle
import codecs
import collections
import dataclasses
import io
import os
import pickle
import struct
import zipfile
from collections.abc import Callable
from typing import Any, BinaryIO

import numpy as np

__all__ = ["UnsafeCheckpointError", "load_pytorch"]

MAGIC_NUMBER = 0x1950A86A20F9469CFC6C  # the sequential format's first pickle
PROTOCOL_VERSION = 1001  # its second

# torch.<Name>Storage -> the NumPy dtype of its elements ("bfloat16" is read as uint16 bits).
_STORAGE_DTYPES = {
    "DoubleStorage": "float64",
    "FloatStorage": "float32",
    "HalfStorage": "float16",
    "BFloat16Storage": "bfloat16",
    "LongStorage": "int64",
    "IntStorage": "int32",
    "ShortStorage": "int16",
    "CharStorage": "int8",
    "ByteStorage": "uint8",
    "BoolStorage": "bool",
    "ComplexFloatStorage": "complex64",
    "ComplexDoubleStorage": "complex128",
    "UntypedStorage": "uint8",
}
# torch.<dtype> (the dtype argument of _rebuild_tensor_v3) -> NumPy.
_TORCH_DTYPES = {
    "float64": "float64",
    "float32": "float32",
    "float16": "float16",
    "bfloat16": "bfloat16",
    "int64": "int64",
    "int32": "int32",
    "int16": "int16",
    "int8": "int8",
    "uint8": "uint8",
    "uint16": "uint16",
    "uint32": "uint32",
    "uint64": "uint64",
    "bool": "bool",
    "complex64": "complex64",
    "complex128": "complex128",
}


class UnsafeCheckpointError(ValueError):
    """A checkpoint's pickle names something other than tensors, storages and plain
    containers (what ``torch.load(weights_only=True)`` refuses too): nothing was imported or
    called."""


@dataclasses.dataclass(frozen=True)
class _Dtype:
    """A storage type or a ``torch.<dtype>`` named by the pickle: its NumPy element type."""

    name: str

    @property
    def itemsize(self) -> int:
        return 2 if self.name == "bfloat16" else np.dtype(self.name).itemsize


@dataclasses.dataclass(frozen=True)
class _Storage:
    """A storage named by a persistent id: its key, element type and element count."""

    key: str
    dtype: _Dtype
    numel: int


@dataclasses.dataclass(frozen=True)
class _Tensor:
    """A tensor as the pickle describes it; its values are read once the storages are."""

    storage: _Storage
    offset: int
    size: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: _Dtype


# ---------------------------------------------------------------- what the pickle may name
def _rebuild_tensor(storage, storage_offset, size, stride, *_):
    """``torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad,
    backward_hooks, metadata=None)`` (and ``_rebuild_tensor``)."""
    return _tensor(
        storage, storage_offset, size, stride, storage.dtype if _is_storage(storage) else None
    )


def _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, hooks, dtype, *_):
    """``torch._utils._rebuild_tensor_v3``: the dtype is given apart from the storage's."""
    del requires_grad, hooks
    return _tensor(storage, storage_offset, size, stride, dtype)


def _rebuild_parameter(data, *_):
    """``torch._utils._rebuild_parameter(data, requires_grad, backward_hooks[, state])``."""
    if not isinstance(data, _Tensor):
        raise UnsafeCheckpointError(f"A parameter must wrap a tensor; the pickle gives {data!r}.")
    return data


def _rebuild_from_type_v2(function, new_type, args, state):
    """``torch._tensor._rebuild_from_type_v2``: a plain tensor or parameter saved through its
    type (no subclass, no attributes)."""
    if new_type not in (_TENSOR_TYPE, _PARAMETER_TYPE) or state:
        raise UnsafeCheckpointError(
            "The checkpoint holds a tensor subclass or a tensor with attributes; only plain "
            "tensors and parameters are read."
        )
    return function(*args)


def _is_storage(value) -> bool:
    return isinstance(value, _Storage)


def _tensor(storage, offset, size, stride, dtype) -> _Tensor:
    if not _is_storage(storage) or not isinstance(dtype, _Dtype):
        raise UnsafeCheckpointError(
            f"A tensor must be rebuilt from a storage and a dtype; the pickle gives {storage!r}."
        )
    if dtype != storage.dtype and storage.dtype.name != "uint8":
        raise ValueError(
            f"A {dtype.name} tensor views a {storage.dtype.name} storage: not a layout torch.save "
            "writes."
        )
    size, stride = tuple(size), tuple(stride)
    ints = all(isinstance(i, int) and not isinstance(i, bool) for i in (offset, *size, *stride))
    if not ints or len(size) != len(stride) or offset < 0 or min((*size, *stride), default=0) < 0:
        raise ValueError(
            f"A tensor's offset, sizes and strides must be non-negative ints of one rank; the "
            f"checkpoint gives offset={offset!r}, size={size!r}, stride={stride!r}."
        )
    return _Tensor(storage, offset, size, stride, dtype)


def _encode(text: str, encoding: str = "latin1") -> bytes:
    """``_codecs.encode``: how protocol-2 pickles write ``bytes``."""
    if encoding not in ("latin1", "latin-1"):
        raise UnsafeCheckpointError(f"Bytes must be latin-1 encoded; received {encoding!r}.")
    return codecs.encode(text, encoding)


class _TypeMarker:
    """``torch.Tensor`` / ``torch.nn.parameter.Parameter``, as ``_rebuild_from_type_v2`` names
    them; never called."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


_TENSOR_TYPE = _TypeMarker("torch.Tensor")
_PARAMETER_TYPE = _TypeMarker("torch.nn.parameter.Parameter")
_ALLOWED: dict[tuple[str, str], Any] = {
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("builtins", "set"): set,
    ("builtins", "frozenset"): frozenset,
    ("builtins", "bytearray"): bytearray,
    ("builtins", "complex"): complex,
    ("_codecs", "encode"): _encode,
    ("torch", "Size"): tuple,
    ("torch", "Tensor"): _TENSOR_TYPE,
    ("torch.nn.parameter", "Parameter"): _PARAMETER_TYPE,
    ("torch._utils", "_rebuild_tensor"): _rebuild_tensor,
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor,
    ("torch._utils", "_rebuild_tensor_v3"): _rebuild_tensor_v3,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter,
    ("torch._tensor", "_rebuild_from_type_v2"): _rebuild_from_type_v2,
}
_ALLOWED.update({("torch", name): _Dtype(dtype) for name, dtype in _STORAGE_DTYPES.items()})
_ALLOWED[("torch.storage", "UntypedStorage")] = _Dtype("uint8")
_ALLOWED.update({("torch", name): _Dtype(dtype) for name, dtype in _TORCH_DTYPES.items()})


class _RestrictedUnpickler(pickle._Unpickler):
    """The standard (Python) unpickler with every import and ``BUILD`` restricted: globals
    come from ``_ALLOWED`` only; ``BUILD`` sets attributes on an ``OrderedDict`` only
    (state dicts carry ``_metadata``), which are dropped."""

    dispatch = dict(pickle._Unpickler.dispatch)

    def __init__(self, file: BinaryIO, storage: Callable[[tuple], _Storage] | None):
        super().__init__(file, encoding="latin1")
        self._storage = storage

    def find_class(self, module: str, name: str):
        if self.proto < 3:  # protocol 2 writes Python 2's names (__builtin__.set): map them back
            module, name = _compat_pickle.NAME_MAPPING.get((module, name), (module, name))
            module = _compat_pickle.IMPORT_MAPPING.get(module, module)
        allowed = _ALLOWED.get((module, name))
        if allowed is None:
            raise UnsafeCheckpointError(
                f"The checkpoint's pickle names {module}.{name}, which is neither a tensor, a "
                "storage nor a plain container (what torch.load(weights_only=True) refuses too); "
                "it was not imported and nothing was loaded."
            )
        return allowed

    def persistent_load(self, saved_id):
        if self._storage is None:
            raise UnsafeCheckpointError("A persistent id outside the checkpoint's object.")
        if not isinstance(saved_id, tuple) or not saved_id or saved_id[0] != "storage":
            raise UnsafeCheckpointError(f"Unknown persistent id {saved_id!r}: not a storage.")
        return self._storage(saved_id[1:])

    def load_build(self):
        state = self.stack.pop()
        target = self.stack[-1]
        if not isinstance(target, collections.OrderedDict):
            raise UnsafeCheckpointError(
                f"The checkpoint's pickle sets the state of a {type(target).__name__}; only an "
                f"OrderedDict's attributes are accepted (state {str(state)[:80]})."
            )

    dispatch[pickle.BUILD[0]] = load_build


# ---------------------------------------------------------------- the two formats
def load_pytorch(path: str | os.PathLike) -> Any:
    """Read a ``torch.save`` file (zip or sequential format) without PyTorch.

    Args:
        path: The checkpoint.

    Returns:
        The saved object with every tensor as a NumPy array of its dtype (``bfloat16`` as
        ``float32``, exactly): for a state dict, ``{name: np.ndarray}``.

    Raises:
        UnsafeCheckpointError: the pickle names anything but tensors, storages and plain
            containers; nothing was imported or called.
        ValueError: not a PyTorch checkpoint, or damaged (a storage shorter than its tensors).
    """
    path = os.fspath(path)
    with open(path, "rb") as f:
        if zipfile.is_zipfile(f):
            f.seek(0)
            return _load_zip(f, path)
        f.seek(0)
        return _load_sequential(f, path)


def _load_zip(f: BinaryIO, path: str) -> Any:
    with zipfile.ZipFile(f) as archive:
        names = archive.namelist()
        pickles = [n for n in names if n.endswith("/data.pkl") and n.count("/") == 1]
        if len(pickles) != 1:
            hint = (
                " (a TorchScript archive: load it with torch.jit.load)"
                if any(n.endswith("/constants.pkl") for n in names)
                else ""
            )
            raise ValueError(f"{path!r} is a zip file but not a torch.save checkpoint{hint}.")
        prefix = pickles[0][: -len("data.pkl")]
        order = _byte_order(archive, prefix)
        storages: dict[str, _Storage] = {}
        obj = _unpickle(archive.read(pickles[0]), _storage_loader(storages, path, legacy=False))
        data = {key: _record(archive, prefix, storage, path) for key, storage in storages.items()}
    return _materialise(obj, data, order, path)


def _record(archive: zipfile.ZipFile, prefix: str, storage: _Storage, path: str) -> bytes:
    """A storage's record, its size checked before it is read."""
    name = f"{prefix}data/{storage.key}"
    try:
        info = archive.getinfo(name)
    except KeyError:
        raise ValueError(f"{path!r} has no record {name!r} for a storage it names.") from None
    expected = storage.numel * storage.dtype.itemsize
    if info.file_size != expected:
        raise ValueError(
            f"{path!r}: record {name!r} has {info.file_size} bytes; its {storage.numel} "
            f"{storage.dtype.name} elements need {expected}."
        )
    return archive.read(name)


def _byte_order(archive: zipfile.ZipFile, prefix: str) -> str:
    name = f"{prefix}byteorder"
    if name not in archive.namelist():
        return "<"  # before PyTorch 1.13: little-endian machines wrote no mark
    order = archive.read(name)
    if order not in (b"little", b"big"):
        raise ValueError(f"Unknown byte order {order!r} in the checkpoint.")
    return "<" if order == b"little" else ">"


def _load_sequential(f: BinaryIO, path: str) -> Any:
    try:
        magic = _unpickle_one(f, None)
    except UnsafeCheckpointError:
        raise
    except ValueError:
        magic = None
    if magic != MAGIC_NUMBER:
        raise ValueError(
            f"{path!r} is not a PyTorch checkpoint (neither torch.save's zip archive nor its "
            "sequential format; files from PyTorch before 0.4, tar archives, are not read)."
        )
    version = _unpickle_one(f, None)
    _unpickle_one(f, None)  # the saving system's sizes; the storages are little-endian always
    if version != PROTOCOL_VERSION:
        raise ValueError(f"{path!r}: unknown PyTorch serialisation protocol {version!r}.")
    storages: dict[str, _Storage] = {}
    obj = _unpickle_one(f, _storage_loader(storages, path, legacy=True))
    keys = _unpickle_one(f, None)
    if not isinstance(keys, list) or set(keys) != set(storages):
        raise ValueError(f"{path!r}: the storage keys do not match the object's storages.")
    data = {}
    for key in keys:
        (count,) = struct.unpack("<q", _read_exactly(f, 8, path))
        if count != storages[key].numel:
            raise ValueError(
                f"{path!r}: storage {key!r} holds {count} elements; the object needs "
                f"{storages[key].numel}."
            )
        data[key] = _read_exactly(f, count * storages[key].dtype.itemsize, path)
    return _materialise(obj, data, "<", path)


def _read_exactly(f: BinaryIO, size: int, path: str) -> bytes:
    data = f.read(size)
    if len(data) != size:
        raise ValueError(f"{path!r} is truncated: a storage ends before its last byte.")
    return data


def _unpickle(data: bytes, storage) -> Any:
    return _unpickle_one(io.BytesIO(data), storage)


def _unpickle_one(f: BinaryIO, storage) -> Any:
    try:
        return _RestrictedUnpickler(f, storage).load()
    except UnsafeCheckpointError:
        raise
    except (pickle.UnpicklingError, EOFError, TypeError, IndexError, KeyError) as err:
        raise ValueError(f"The checkpoint's pickle is damaged: {err}") from None


def _storage_loader(storages: dict[str, _Storage], path: str, legacy: bool):
    """The persistent-id handler: records each storage the object names."""

    def storage(fields: tuple) -> _Storage:
        if len(fields) != (5 if legacy else 4):
            raise ValueError(f"{path!r}: a storage id of {len(fields)} fields: {fields!r}.")
        dtype, key, _location, numel = fields[:4]
        if not isinstance(dtype, _Dtype) or not isinstance(numel, int) or numel < 0:
            raise UnsafeCheckpointError(f"{path!r}: not a storage id: {fields!r}.")
        if legacy and fields[4] is not None:
            raise ValueError(f"{path!r}: storage views (PyTorch < 0.4) are not read.")
        key = str(key)
        if key in storages and storages[key] != _Storage(key, dtype, numel):
            raise ValueError(f"{path!r}: storage {key!r} is named with two layouts.")
        storages[key] = _Storage(key, dtype, numel)
        return storages[key]

    return storage


# ---------------------------------------------------------------- tensors from storages
def _materialise(obj, data: dict[str, bytes], order: str, path: str) -> Any:
    """``obj`` with every ``_Tensor`` replaced by its values (``data``: each storage's
    bytes, their lengths already checked)."""

    def replace(value):
        if isinstance(value, _Tensor):
            return _values(value, data[value.storage.key], order, path)
        if isinstance(value, dict):
            items = [(k, replace(v)) for k, v in value.items()]
            return type(value)(items) if isinstance(value, collections.OrderedDict) else dict(items)
        if isinstance(value, (list, tuple, set, frozenset)):
            return type(value)(replace(v) for v in value)
        return value

    return replace(obj)


def _values(tensor: _Tensor, raw: bytes, order: str, path: str) -> np.ndarray:
    itemsize = tensor.dtype.itemsize
    count = len(raw) // itemsize
    last = tensor.offset + sum(
        (n - 1) * s for n, s in zip(tensor.size, tensor.stride, strict=True) if n
    )
    if all(tensor.size) and last >= count:
        raise ValueError(
            f"{path!r}: a tensor of size {tensor.size} at offset {tensor.offset} with strides "
            f"{tensor.stride} reaches element {last} of a storage of {count}: damaged file."
        )
    bits = "uint16" if tensor.dtype.name == "bfloat16" else tensor.dtype.name
    flat = np.frombuffer(raw, np.dtype(bits).newbyteorder(order), count=count)
    if not all(tensor.size):
        values = np.zeros(tensor.size, flat.dtype)
    else:
        values = np.lib.stride_tricks.as_strided(
            flat[tensor.offset :],
            tensor.size,
            tuple(s * itemsize for s in tensor.stride),
            writeable=False,
        )
    values = np.array(values, values.dtype.newbyteorder("="))  # a copy in native order
    if tensor.dtype.name == "bfloat16":  # the upper half of a float32
        values = (values.astype(np.uint32) << 16).view(np.float32)
    return values
