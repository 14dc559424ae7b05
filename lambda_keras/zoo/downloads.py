"""Fetching a registered weights file and checking it by its rule
([lambda_keras.zoo.integrity][lambda_keras.zoo.integrity]) before anything reads it.

A file with a ``url`` is fetched once with ``keras.utils.get_file`` into the project's folder of
the Keras cache. A file on the Hugging Face Hub (``hub_repo``) is fetched with
``huggingface_hub`` (the ``[timm]`` extra) into its own cache under the same folder: the file's
metadata is read first (the commit the revision resolves to, and the SHA-256 the Hub records
for the file), checked against the spec, and the downloaded bytes are checked after.
``HUB_ENDPOINT`` (or ``huggingface_hub``'s ``HF_ENDPOINT``) points at another Hub, such as a
mirror or the local server of the tests.
"""

from __future__ import annotations

import dataclasses
import os
import urllib.parse

import keras

from lambda_keras.zoo.integrity import INTEGRITY_RULES, check_file, is_sha256
from lambda_keras.zoo.weights_spec import WeightsSpec

__all__ = ["HUB_ENDPOINT", "Fetched", "fetch", "resolve_revision"]

HUB_ENDPOINT: str | None = None
"""The Hub the registry downloads from; None: ``huggingface_hub``'s (``HF_ENDPOINT``, default
https://huggingface.co)."""


@dataclasses.dataclass(frozen=True)
class Fetched:
    """A checked download: its local path, its SHA-256 and, from the Hub, its commit."""

    path: str
    sha256: str
    commit: str | None = None


def fetch(spec: WeightsSpec, cache_dir: str) -> Fetched:
    """Download (or find in the cache) the file of ``spec`` and check it by its rule.

    Args:
        spec: The registered weights.
        cache_dir: The project's folder of the Keras cache.

    Raises:
        ValueError: the file fails its rule (it is removed and nothing is read), or the Hub
            reports another commit or digest than the spec pins (nothing is downloaded).
        ImportError: a Hub file without ``huggingface_hub`` installed.
    """
    if spec.hub_repo is not None:
        return _fetch_from_hub(spec, cache_dir)
    filename = os.path.basename(urllib.parse.urlparse(spec.url).path) or spec.name
    path = keras.utils.get_file(
        filename,
        origin=spec.url,
        cache_subdir=".",
        cache_dir=cache_dir,
    )
    check_file(path, spec.sha256, name=spec.name, origin=spec.url, reason=_reason(spec))
    return Fetched(path, spec.sha256)


def _reason(spec: WeightsSpec, commit: str | None = None) -> str:
    rule = INTEGRITY_RULES[spec.integrity].title
    where = f" at commit {commit}" if commit else ""
    return f"{rule}{where}, from {spec.source or 'the spec'}"


def _hub():
    try:
        import huggingface_hub
    except ImportError as err:
        raise ImportError(
            "Downloading weights from the Hugging Face Hub needs huggingface_hub: "
            "pip install 'lambda-keras[timm]'."
        ) from err
    return huggingface_hub


def _fetch_from_hub(spec: WeightsSpec, cache_dir: str) -> Fetched:
    hub = _hub()
    commit = resolve_revision(spec)
    origin = f"the Hub's {spec.hub_repo}/{spec.hub_filename} at {commit}"
    url = hub.hf_hub_url(spec.hub_repo, spec.hub_filename, revision=commit, endpoint=HUB_ENDPOINT)
    metadata = hub.get_hf_file_metadata(url, endpoint=HUB_ENDPOINT)
    expected = _expected_sha256(spec, commit, metadata, origin)
    path = hub.hf_hub_download(
        spec.hub_repo,
        spec.hub_filename,
        revision=metadata.commit_hash or commit,  # main: the commit it named just now
        cache_dir=os.path.join(cache_dir, "huggingface"),
        endpoint=HUB_ENDPOINT,
    )
    reason = _reason(spec, metadata.commit_hash)
    check_file(path, expected, name=spec.name, origin=origin, reason=reason)
    return Fetched(path, expected, metadata.commit_hash)


def resolve_revision(spec: WeightsSpec) -> str:
    """The revision to download at: the pinned commit (a short id resolved to the one commit of
    the repository's history on main it starts), or ``main`` (``hub_latest``)."""
    revision = spec.hub_revision
    if revision == "main" or len(revision) == 40:
        return revision
    api = _hub().HfApi(endpoint=HUB_ENDPOINT)
    commits = [c.commit_id for c in api.list_repo_commits(spec.hub_repo)]
    matches = [commit for commit in commits if commit.startswith(revision)]
    if len(matches) != 1:
        raise ValueError(
            f"The commit {revision!r} pinned for weights {spec.name!r} names "
            f"{len(matches)} commits of {spec.hub_repo} (exactly one needed): {matches}. "
            "Nothing was downloaded."
        )
    return matches[0]


def _expected_sha256(spec: WeightsSpec, commit: str, metadata, origin: str) -> str:
    """The SHA-256 the download must have, after the Hub's metadata is checked against the
    spec (before anything is downloaded)."""
    recorded = metadata.etag if is_sha256(metadata.etag) else None
    if commit != "main" and metadata.commit_hash != commit:
        raise ValueError(
            f"The Hub served {spec.hub_repo} at commit {metadata.commit_hash!r} when asked for "
            f"{commit!r} (weights {spec.name!r}). Nothing was downloaded."
        )
    if spec.integrity == "sha256":
        if recorded is not None and recorded != spec.sha256:
            raise ValueError(
                f"The Hub records SHA-256 {recorded} for {origin}; weights {spec.name!r} pin "
                f"{spec.sha256} ({_reason(spec)}). Nothing was downloaded."
            )
        return spec.sha256
    if recorded is None:
        raise ValueError(
            f"The Hub reports no SHA-256 (Git LFS object id) for {origin} (ETag "
            f"{metadata.etag!r}), which the rule {spec.integrity!r} of weights {spec.name!r} "
            "checks the download against. Nothing was downloaded."
        )
    return recorded
