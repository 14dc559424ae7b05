"""How a downloaded weights file is checked before anything reads it.

Every registered file ([WeightsSpec][lambda_keras.zoo.weights_spec.WeightsSpec]) names one rule,
its ``integrity``; each rule's meaning, what it refuses and what it trusts, is
[INTEGRITY_RULES][lambda_keras.zoo.integrity.INTEGRITY_RULES] (the docs' tables render it). A
file that fails its rule is removed from the cache, nothing is read from it, and the error
says which SHA-256 was expected, from where, and which was found.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re

__all__ = [
    "INTEGRITY_RULES",
    "IntegrityRule",
    "check_file",
    "file_sha256",
    "is_commit",
    "is_sha256",
]


@dataclasses.dataclass(frozen=True)
class IntegrityRule:
    """One way a weights file is checked.

    Attributes:
        title: A few words for tables.
        checks: What the downloaded bytes are compared with, and when.
        refuses: What a file that passes cannot be.
        trusts: What the check rests on (what it cannot detect).
    """

    title: str
    checks: str
    refuses: str
    trusts: str


INTEGRITY_RULES: dict[str, IntegrityRule] = {
    "sha256": IntegrityRule(
        title="published SHA-256",
        checks=(
            "The file's SHA-256 must equal the whole digest pinned in the spec, read in a "
            "publication apart from the download (cited in the spec's `source`). On the Hugging "
            "Face Hub, the digest the Hub records for the file is compared with it before the "
            "download too."
        ),
        refuses=(
            "A corrupt, truncated or substituted file, and any other version of it, wherever "
            "the bytes came from."
        ),
        trusts="The publication the digest was read in.",
    ),
    "hub_commit": IntegrityRule(
        title="Hub commit's LFS SHA-256",
        checks=(
            "The file is fetched at a Hugging Face Hub commit pinned in the spec (its id read on "
            "the Hub's pages, cited in `source`; a short id is resolved on the repository's "
            "commit list, and must name exactly one of its commits). Before the download the "
            "Hub must report that commit and a Git LFS object id for the file (the SHA-256 that "
            "the commit's tree holds for it); the downloaded bytes must have that SHA-256."
        ),
        refuses=(
            "A corrupt, truncated or substituted download, and any file other than the one the "
            "commit holds (a later upload to the repository included)."
        ),
        trusts=(
            "huggingface.co's record of the commit (read over HTTPS): the digest is the Hub's, "
            "not published apart from it."
        ),
    ),
    "hub_latest": IntegrityRule(
        title="Hub's LFS SHA-256 on main",
        checks=(
            "No commit of the file could be cited: it is fetched from the repository's main "
            "branch, and the downloaded bytes must have the SHA-256 the Hub reports for it "
            "there (its Git LFS object id). The commit it came from is recorded beside the "
            "converted file."
        ),
        refuses="A corrupt, truncated or substituted download.",
        trusts=(
            "huggingface.co, and the repository's owners: a new file uploaded to main would be "
            "accepted. Pin a commit (`hub_commit`) as soon as one can be cited."
        ),
    ),
}
"""The integrity rules by the name a [WeightsSpec][lambda_keras.zoo.weights_spec.WeightsSpec]
gives in ``integrity``."""

_SHA256 = re.compile(r"[0-9a-f]{64}")
_COMMIT = re.compile(r"[0-9a-f]{7,40}")


def is_sha256(value) -> bool:
    """Whether ``value`` is a whole SHA-256 in lower-case hex."""
    return isinstance(value, str) and _SHA256.fullmatch(value) is not None


def is_commit(value) -> bool:
    """Whether ``value`` is a git commit id: 7 to 40 lower-case hex digits."""
    return isinstance(value, str) and _COMMIT.fullmatch(value) is not None


def file_sha256(path: str | os.PathLike) -> str:
    """The SHA-256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_file(path: str, expected: str, *, name: str, origin: str, reason: str) -> None:
    """Raise ``ValueError`` unless the file at ``path`` has SHA-256 ``expected``; a file that
    fails is removed first (and the blob a cache link points to), so the next call downloads it
    again.

    Args:
        path: The downloaded file.
        expected: The SHA-256 it must have.
        name: The weights' registered name, for the message.
        origin: Where the file came from (a URL, a Hub repository and revision).
        reason: Where ``expected`` comes from (the rule and its source).
    """
    found = file_sha256(path)
    if found == expected:
        return
    _remove(path)
    raise ValueError(
        f"Checksum mismatch for weights {name!r} from {origin}: expected SHA-256 {expected} "
        f"({reason}); the download has {found}. The file was removed and nothing was loaded "
        "(call again to download it again)."
    )


def _remove(path: str) -> None:
    target = os.path.realpath(path)
    for item in {path, target}:
        if os.path.lexists(item):
            os.remove(item)
