"""A local mirror of the registered pretrained files, for tests that run what a user runs
(``get_model(name, weights="imagenet")``, ``maskrcnn_resnet50_fpn(weights="coco")``, the
README's and the docs' samples) without the network: a Hugging Face Hub on 127.0.0.1
(``tests/local_hub.py``) serving checkpoints of timm's tensor names and shapes with random
values, each at the commit its spec pins, and torchvision's COCO files in torch.save's format."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

from safetensors.numpy import save

from lambda_keras.detection.torchvision import mask_rcnn
from lambda_keras.zoo import downloads
from lambda_keras.zoo import weights as weights_lib
from tests.checkpoints.pth_writer import write_pth
from tests.detection.torchvision import torchvision_states
from tests.local_hub import LocalHub, serving
from tests.zoo.timm_states import random_state

# torchvision's COCO files by builder: the spec, and whether the file is in the sequential
# format of 2019 (v1's) rather than the zip format (v2's).
COCO_FILES = {
    "maskrcnn_resnet50_fpn": (mask_rcnn.COCO_WEIGHTS, True),
    "maskrcnn_resnet50_fpn_v2": (mask_rcnn.COCO_V2_WEIGHTS, False),
}


def imagenet_specs() -> dict[str, weights_lib.WeightsSpec]:
    """The registered ``weights="imagenet"`` entries by architecture."""
    specs = weights_lib.registered_weights().values()
    return {s.architecture: s for s in specs if "imagenet" in s.aliases}


def full_commit(revision: str) -> str:
    """The commit the local Hub holds a file at: the pinned one, completed to 40 digits."""
    return "c" * 40 if revision == "main" else revision.ljust(40, "0")


def publish(
    hub: LocalHub, architecture: str, monkeypatch, seed: int = 0, state: dict | None = None
) -> dict:
    """Serve ``state`` (default: a random checkpoint) as the registered weights of
    ``architecture`` (at its pinned commit, after an older commit and before a newer one that
    leaves it alone); a published SHA-256 (of timm's real file) is replaced by the served
    file's. Returns the state."""
    spec = imagenet_specs()[architecture]
    state = random_state(architecture, seed) if state is None else state
    data = save(state)
    hub.add_file(spec.hub_repo, "README.md", b"initial commit", "1" * 40)
    hub.add_file(spec.hub_repo, spec.hub_filename, data, full_commit(spec.hub_revision))
    if spec.hub_revision != "main":
        hub.add_file(spec.hub_repo, "README.md", b"a later commit", "2" * 40)
    if spec.integrity == "sha256":
        served = dataclasses.replace(spec, sha256=hashlib.sha256(data).hexdigest())
        monkeypatch.setitem(weights_lib._REGISTRY, spec.name, served)
    return state


def tamper(hub: LocalHub, architecture: str) -> None:
    """Serve the registered ImageNet file of ``architecture`` with its last byte changed
    (same size: a shorter file is refused by huggingface_hub itself), the Hub's record of it
    unchanged."""
    spec = imagenet_specs()[architecture]
    repository = hub.repositories[spec.hub_repo]
    _, tree = repository.tree(full_commit(spec.hub_revision))
    tampered = bytearray(tree[spec.hub_filename])
    tampered[-1] ^= 1
    repository.tampered[spec.hub_filename] = bytes(tampered)


@contextlib.contextmanager
def pretrained_mirror(monkeypatch, architectures: tuple[str, ...] = ()) -> Iterator[LocalHub]:
    """A local Hub that the registry downloads from while the block runs, serving the
    registered files of ``architectures``."""
    with serving(LocalHub()) as hub:
        monkeypatch.setattr(downloads, "HUB_ENDPOINT", hub.url)
        for architecture in architectures:
            publish(hub, architecture, monkeypatch)
        yield hub


def publish_coco(
    server: LocalHub, architecture: str, folder: Path, monkeypatch, state: dict | None = None
) -> dict:
    """Serve ``state`` (default: a random checkpoint of torchvision's names and shapes) as the
    COCO file of ``architecture`` (written in ``folder``); its registered spec points at it,
    with its digest. Returns the state."""
    spec, legacy = COCO_FILES[architecture]
    if state is None:
        state = torchvision_states.random_state(architecture, seed=3)
    data = write_pth(folder / "checkpoint.pth", state, legacy=legacy).read_bytes()
    path = "/models/" + os.path.basename(spec.url)
    server.files[path] = data
    local = dataclasses.replace(
        spec, url=server.url + path, sha256=hashlib.sha256(data).hexdigest()
    )
    monkeypatch.setitem(weights_lib._REGISTRY, spec.name, local)
    return state
