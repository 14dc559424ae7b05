"""The registered ImageNet weights load in one line (``get_model(name, weights="imagenet")``),
through the user's own code path, from a Hugging Face Hub on 127.0.0.1 (``tests/local_hub.py``)
serving files with timm's tensor names and shapes: each integrity rule, a tampered download, a
Hub that contradicts the pin, a short commit id, a damaged or stale conversion in the cache."""

import json
from pathlib import Path

import numpy as np
import pytest

from lambda_keras import zoo
from lambda_keras.zoo import timm_checkpoint
from lambda_keras.zoo import weights as weights_lib
from tests.pretrained_mirror import (
    full_commit,
    imagenet_specs,
    pretrained_mirror,
    publish,
    tamper,
)

IMAGENET = imagenet_specs()


@pytest.fixture
def hub(tmp_path, monkeypatch):
    monkeypatch.setattr(weights_lib, "CACHE_DIR", str(tmp_path / "cache"))
    with pretrained_mirror(monkeypatch) as local:
        yield local


def assert_holds(model, state: dict, architecture: str) -> None:
    """Every weight of ``model`` is the checkpoint's tensor, converted."""
    family = weights_lib.timm_family(architecture)
    expected = timm_checkpoint.keras_weights(state, family)
    assert {w.path for w in model.weights} == set(expected)
    for weight in model.weights:
        np.testing.assert_array_equal(
            np.asarray(weight), expected[weight.path], err_msg=weight.path
        )


@pytest.mark.parametrize(
    "architecture", ["lambda_resnet26t", "lambda_resnet26rpt_256", "lambda_resnet50ts"]
)
def test_each_rule_loads_the_weights_in_one_line_then_from_the_cache(
    hub, architecture, monkeypatch
):
    """26t: a short commit id (``hub_commit``); 26rpt: ``hub_latest``; 50ts: ``sha256``."""
    state = publish(hub, architecture, monkeypatch)
    model = zoo.get_model(architecture, weights="imagenet")
    assert model.input.shape == (None, 256, 256, 3)
    assert_holds(model, state, architecture)
    for weight in model.weights:
        weight.assign(np.zeros(weight.shape, weight.dtype))
    hub.requests.clear()
    spec = weights_lib.resolve_weights("imagenet", architecture)
    weights_lib.load_registered(model, spec)  # what a second builder call does
    assert hub.requests == []  # the checked conversion in the cache
    assert_holds(model, state, architecture)


def test_a_tampered_download_is_refused_and_removed_and_nothing_is_loaded(hub, monkeypatch):
    """Same size, one byte changed (a shorter file is refused by huggingface_hub itself)."""
    publish(hub, "lambda_resnet26t", monkeypatch)
    spec = IMAGENET["lambda_resnet26t"]
    tamper(hub, "lambda_resnet26t")
    with pytest.raises(
        ValueError, match=r"expected SHA-256 [0-9a-f]{64} \(Hub commit's LFS"
    ) as err:
        zoo.LambdaResNet26T(weights="imagenet")
    assert "The file was removed and nothing was loaded" in str(err.value)
    cache = Path(weights_lib.cache_folder())
    assert not list(cache.rglob("blobs/*")) and not list(cache.glob("*.weights.h5"))
    del hub.repositories[spec.hub_repo].tampered[spec.hub_filename]
    zoo.LambdaResNet26T(weights="imagenet")  # the next call downloads it again


def test_a_hub_serving_another_commit_is_refused_before_the_download(hub, monkeypatch):
    publish(hub, "lambda_resnet26t", monkeypatch)
    spec = IMAGENET["lambda_resnet26t"]
    hub.repositories[spec.hub_repo].wrong_commit = "f" * 40
    with pytest.raises(ValueError, match="at commit 'f{40}' when asked for '5ed46e4.*Nothing was"):
        zoo.LambdaResNet26T(weights="imagenet")
    assert (
        "GET",
        f"/{spec.hub_repo}/resolve/{full_commit(spec.hub_revision)}/model.safetensors",
    ) not in hub.requests


def test_a_published_digest_the_hub_contradicts_is_refused_before_the_download(hub):
    """The pinned SHA-256 is timm's real file's; the local Hub records another file."""
    spec = IMAGENET["lambda_resnet50ts"]
    hub.add_file(spec.hub_repo, spec.hub_filename, b"another file", spec.hub_revision)
    with pytest.raises(ValueError, match=f"records SHA-256 .* pin {spec.sha256} .*Nothing was"):
        zoo.LambdaResNet50TS(weights="imagenet")
    assert [method for method, _ in hub.requests] == ["HEAD"]


def test_a_file_without_a_hub_digest_is_refused(hub, monkeypatch):
    publish(hub, "lambda_resnet26rpt_256", monkeypatch)
    hub.repositories[IMAGENET["lambda_resnet26rpt_256"].hub_repo].lfs = False
    with pytest.raises(ValueError, match="reports no SHA-256 .*'hub_latest'.*Nothing was"):
        zoo.LambdaResNet26RPT256(weights="imagenet")


def test_a_short_commit_id_must_name_exactly_one_commit(hub):
    spec = IMAGENET["lambda_resnet26t"]
    hub.add_file(spec.hub_repo, "README.md", b"one", "1" * 40)
    with pytest.raises(ValueError, match="'5ed46e4' .* names 0 commits .*Nothing was downloaded"):
        zoo.LambdaResNet26T(weights="imagenet")
    for tail in "ab":
        hub.add_file(spec.hub_repo, "model.safetensors", b"x", "5ed46e4" + tail * 33)
    with pytest.raises(ValueError, match="names 2 commits"):
        zoo.LambdaResNet26T(weights="imagenet")


def test_a_damaged_conversion_in_the_cache_is_made_again(hub, monkeypatch):
    state = publish(hub, "lambda_resnet26t", monkeypatch)
    zoo.LambdaResNet26T(weights="imagenet")
    converted = Path(weights_lib.cache_folder()) / "lambda_resnet26t.c1_in1k.weights.h5"
    data = bytearray(converted.read_bytes())
    data[len(data) // 2] ^= 0xFF
    converted.write_bytes(bytes(data))
    with pytest.warns(UserWarning, match="do not have the SHA-256 recorded"):
        model = zoo.LambdaResNet26T(weights="imagenet")
    assert_holds(model, state, "lambda_resnet26t")


def test_a_conversion_of_another_pin_is_made_again(hub, monkeypatch):
    """A converted file whose manifest names another revision (the spec's pin changed)."""
    publish(hub, "lambda_resnet26t", monkeypatch)
    zoo.LambdaResNet26T(weights="imagenet")
    manifest = Path(weights_lib.cache_folder()) / "lambda_resnet26t.c1_in1k.weights.h5.json"
    recorded = json.loads(manifest.read_text())
    assert recorded["source_commit"] == full_commit("5ed46e4")
    recorded["pin"]["hub_revision"] = "0123456"
    manifest.write_text(json.dumps(recorded))
    converted = manifest.with_suffix("")
    converted.write_bytes(b"stale")  # would fail to load, were it read
    zoo.LambdaResNet26T(weights="imagenet")
    assert json.loads(manifest.read_text())["pin"]["hub_revision"] == "5ed46e4"
    assert converted.read_bytes() != b"stale"


@pytest.mark.slow
@pytest.mark.parametrize("architecture", sorted(IMAGENET))
def test_every_registered_imagenet_entry_loads_in_one_line(hub, architecture, monkeypatch):
    state = publish(hub, architecture, monkeypatch, seed=1)
    assert_holds(zoo.get_model(architecture, weights="imagenet"), state, architecture)


def test_every_imagenet_entry_cites_its_pin_and_its_metrics():
    assert len(IMAGENET) == 10
    for spec in IMAGENET.values():
        assert spec.source.startswith("https://huggingface.co/" + spec.hub_repo), spec.name
        assert spec.metrics_source == timm_checkpoint.TIMM_RESULTS
        assert 70 < spec.metrics["imagenet_top1"] < spec.metrics["imagenet_top5"] < 100
        assert spec.source_format == "timm" and spec.hub_filename == "model.safetensors"
    rules = {spec.integrity for spec in IMAGENET.values()}
    assert rules == {"sha256", "hub_commit", "hub_latest"}
