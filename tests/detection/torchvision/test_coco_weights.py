"""``maskrcnn_resnet50_fpn(weights="coco")`` (and ``_v2``) in one line in a process where
``import torch`` fails: the registered spec's own path (download, whole SHA-256, the torch-free
reader, conversion, cache), from a server on 127.0.0.1 holding a full-size checkpoint of
torchvision's names and shapes in torch.save's format (v1's in the sequential format of 2019,
v2's in the zip format). Runs on TensorFlow here and on JAX in the child run of
``tests/test_backends.py``."""

import os
import sys
from pathlib import Path

import keras
import numpy as np
import pytest

from lambda_keras.detection.torchvision import checkpoint, mask_rcnn
from lambda_keras.zoo import weights as weights_lib
from tests.local_hub import LocalHub, serving
from tests.pretrained_mirror import publish_coco


@pytest.fixture
def server(tmp_path, monkeypatch):
    if keras.backend.backend() != "torch":  # Keras on PyTorch needs it; the reader never does
        monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.setattr(weights_lib, "CACHE_DIR", str(tmp_path / "cache"))
    with serving(LocalHub()) as hub:
        yield hub


def check_coco_loads(architecture: str, server, tmp_path, monkeypatch) -> None:
    state = publish_coco(server, architecture, tmp_path, monkeypatch)
    model = getattr(mask_rcnn, architecture)(weights="coco")
    loaded = [np.asarray(w) for w in model.weights]
    checkpoint.assign_checkpoint(model, state)  # what a direct conversion assigns
    for weight, value in zip(model.weights, loaded, strict=True):
        np.testing.assert_array_equal(value, np.asarray(weight), err_msg=weight.path)
    assert model.categories[0] == {"id": 1, "name": "person"}


def test_coco_loads_in_one_line_without_pytorch(server, tmp_path, monkeypatch):
    check_coco_loads("maskrcnn_resnet50_fpn", server, tmp_path, monkeypatch)


@pytest.mark.slow
def test_coco_v2_loads_in_one_line_without_pytorch(server, tmp_path, monkeypatch):
    check_coco_loads("maskrcnn_resnet50_fpn_v2", server, tmp_path, monkeypatch)


def test_a_tampered_checkpoint_is_refused_and_removed(server, tmp_path, monkeypatch):
    publish_coco(server, "maskrcnn_resnet50_fpn", tmp_path, monkeypatch)
    path = "/models/" + os.path.basename(mask_rcnn.COCO_WEIGHTS.url)
    server.files[path] = server.files[path][:-1] + b"\x00"
    with pytest.raises(
        ValueError, match=r"expected SHA-256 [0-9a-f]{64} \(published SHA-256, .*removed"
    ):
        mask_rcnn.maskrcnn_resnet50_fpn(weights="coco")
    assert list(Path(weights_lib.cache_folder()).iterdir()) == []
