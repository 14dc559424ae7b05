"""Writes the committed fixtures of ``test_pytorch.py`` with PyTorch itself (run by hand when
they change: ``python tests/checkpoints/make_fixtures.py``, torch installed).

One object holds every kind of tensor a state dict can: each dtype torch.save writes for
weights, a 0-d count, a transposed view, two slices of one storage at non-zero offsets, an
expanded view (stride 0), an empty tensor and a parameter, inside the nested containers of a
training script's checkpoint. It is saved in both formats, and what ``torch.load`` reads back
(``weights_only=True``) is written to ``expected.npz`` (bfloat16 as float32), the reference the
tests compare the torch-free reader with.
"""

from collections import OrderedDict
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).with_name("fixtures")


def checkpoint() -> dict:
    generator = torch.Generator().manual_seed(0)
    shared = torch.arange(24, dtype=torch.float32)
    state = OrderedDict(
        conv=torch.randn(4, 3, 3, 3, generator=generator),
        float64=torch.randn(3, generator=generator, dtype=torch.float64),
        float16=torch.randn(5, generator=generator).half(),
        bfloat16=torch.randn(6, generator=generator).bfloat16(),
        steps=torch.tensor(7),
        flags=torch.tensor([True, False, True]),
        int32=torch.arange(-2, 2, dtype=torch.int32),
        int8=torch.tensor([-128, 0, 127], dtype=torch.int8),
        uint8=torch.tensor([0, 200, 255], dtype=torch.uint8),
        complex64=torch.tensor([1 + 2j, -3j], dtype=torch.complex64),
        transposed=torch.randn(3, 5, generator=generator).t(),
        first=shared[2:8],
        second=shared[10:].view(2, 7),
        expanded=torch.randn(3, 1, generator=generator).expand(3, 4),
        empty=torch.zeros(0, 3),
        parameter=torch.nn.Parameter(torch.randn(2, 2, generator=generator)),
    )
    return {
        "model": state,
        "epoch": 3,
        "name": "fixture",
        "raw": b"\x00\xff",
        "pair": (1, 2.5),
        "tensors": [torch.ones(2)],
    }


def flatten(value, prefix="") -> dict[str, np.ndarray]:
    if isinstance(value, torch.Tensor):
        value = value.detach()
        if value.dtype == torch.bfloat16:
            value = value.float()
        return {prefix: value.numpy()}
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, (list, tuple)):
        items = enumerate(value)
    else:
        return {}
    found = {}
    for key, item in items:
        found.update(flatten(item, f"{prefix}/{key}" if prefix else str(key)))
    return found


def main() -> None:
    HERE.mkdir(exist_ok=True)
    obj = checkpoint()
    torch.save(obj, HERE / "zip_format.pth")
    torch.save(obj, HERE / "sequential_format.pth", _use_new_zipfile_serialization=False)
    loaded = torch.load(HERE / "zip_format.pth", weights_only=True)
    expected = flatten(loaded)
    for name in ("sequential_format.pth",):
        other = flatten(torch.load(HERE / name, weights_only=True))
        assert other.keys() == expected.keys()
        for key, value in expected.items():
            np.testing.assert_array_equal(other[key], value)
    np.savez(HERE / "expected.npz", **expected)
    print(sorted(expected), [p.stat().st_size for p in sorted(HERE.iterdir())])


if __name__ == "__main__":
    main()
