"""The integrity rules: each documented, and a file that fails its check removed."""

import hashlib
import os

import pytest

from lambda_keras.zoo.integrity import INTEGRITY_RULES, check_file, is_commit, is_sha256


def test_every_rule_says_what_it_checks_refuses_and_trusts():
    assert set(INTEGRITY_RULES) == {"sha256", "hub_commit", "hub_latest"}
    for rule in INTEGRITY_RULES.values():
        assert all(len(text) > 20 for text in (rule.checks, rule.refuses, rule.trusts))


def test_a_file_that_fails_is_removed_with_the_blob_a_link_points_to(tmp_path):
    blob = tmp_path / "blobs" / "abc"
    blob.parent.mkdir()
    blob.write_bytes(b"the bytes")
    link = tmp_path / "model.safetensors"
    os.symlink(blob, link)
    check_file(
        str(link), hashlib.sha256(b"the bytes").hexdigest(), name="n", origin="o", reason="r"
    )
    expected = "0" * 64
    with pytest.raises(ValueError, match=f"'n' from o: expected SHA-256 {expected} \\(r\\)"):
        check_file(str(link), expected, name="n", origin="o", reason="r")
    assert not blob.exists() and not os.path.lexists(link)


def test_digest_and_commit_forms():
    assert is_sha256("a" * 64) and not is_sha256("A" * 64) and not is_sha256("a" * 63)
    assert is_commit("5ed46e4") and is_commit("a" * 40) and not is_commit("main")
    assert not is_commit("abc") and not is_commit("a" * 41) and not is_commit(None)
