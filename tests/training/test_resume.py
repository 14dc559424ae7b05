"""Resuming: refuse a backup made with other settings and keep it; a save cut short by a kill
leaves the backup before it whole."""

import json

import keras
import numpy as np
import pytest

from lambda_keras.training import resume

SETTINGS = {"model": "lambda_resnet50", "width_multiplier": 0.125, "rpn_top_k": (1000, 500)}


def with_backup(model_dir, settings=SETTINGS):
    resume.record_settings(str(model_dir), settings)
    (model_dir / "backup").mkdir()
    (model_dir / "backup" / "latest.weights.h5").write_bytes(b"weights")


def test_same_settings_resume(tmp_path):
    with_backup(tmp_path)
    resume.check_resume(str(tmp_path), dict(SETTINGS))  # tuples and lists compare equal


def test_other_settings_are_named_and_the_backup_stays(tmp_path):
    with_backup(tmp_path)
    changed = {**SETTINGS, "width_multiplier": 0.25, "classes": 10}
    with pytest.raises(ValueError) as info:
        resume.check_resume(str(tmp_path), changed)
    message = str(info.value)
    assert f"--model_dir={tmp_path} holds an unfinished run" in message
    assert "--width_multiplier=0.125 there, 0.25 now" in message
    assert "--classes=None there, 10 now" in message
    assert "model=" not in message  # only what differs
    assert (tmp_path / "backup" / "latest.weights.h5").read_bytes() == b"weights"
    assert json.loads((tmp_path / resume.SETTINGS_FILE).read_text())["width_multiplier"] == 0.125


@pytest.mark.parametrize("backup", ["none", "empty"])
def test_without_a_backup_any_settings_start_a_new_run(tmp_path, backup):
    resume.record_settings(str(tmp_path), SETTINGS)  # a finished run: its backup was removed
    if backup == "empty":
        (tmp_path / "backup").mkdir()
    assert not resume.has_backup(str(tmp_path))
    resume.check_resume(str(tmp_path), {**SETTINGS, "model": "resnet_rs50"})


def test_a_backup_older_than_the_settings_file_is_not_checked(tmp_path):
    (tmp_path / "backup").mkdir()
    (tmp_path / "backup" / "checkpoint").write_text("x")
    assert resume.has_backup(str(tmp_path))
    resume.check_resume(str(tmp_path), SETTINGS)


def test_an_unreadable_settings_file_is_named(tmp_path):
    with_backup(tmp_path)
    (tmp_path / resume.SETTINGS_FILE).write_text('{"model": ')  # cut short
    with pytest.raises(ValueError, match="settings file .*run_settings.json cannot be read"):
        resume.check_resume(str(tmp_path), SETTINGS)


def test_record_settings_replaces_the_file_whole(tmp_path):
    resume.record_settings(str(tmp_path / "new"), SETTINGS)
    resume.record_settings(str(tmp_path / "new"), {"model": "resnet_rs50"})
    assert json.loads((tmp_path / "new" / resume.SETTINGS_FILE).read_text()) == {
        "model": "resnet_rs50"
    }
    assert sorted(p.name for p in (tmp_path / "new").iterdir()) == [resume.SETTINGS_FILE]


def test_a_save_cut_short_leaves_the_previous_backup_whole(tmp_path, monkeypatch):
    """A run killed while the backup is written resumes from the backup before (Keras' own
    callback writes in place: a damaged file, then ``OSError`` on the next start)."""
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.compile(optimizer="sgd", loss="mse")
    callback = resume.AtomicBackupAndRestore(str(tmp_path / "backup"))
    callback.set_model(model)
    callback.on_epoch_end(0)  # a complete backup after epoch 0
    saved = model.get_weights()
    model.set_weights([w + 1 for w in saved])

    def killed(filepath, overwrite=True):
        with open(filepath, "wb") as f:
            f.write(b"\x89HDF half a file")
        raise KeyboardInterrupt  # stands for the kill, mid-write

    monkeypatch.setattr(model, "save_weights", killed)
    with pytest.raises(KeyboardInterrupt):
        callback.on_epoch_end(1)
    monkeypatch.undo()
    assert sorted(p.name for p in (tmp_path / "backup").iterdir()) == [
        "latest.weights.h5",
        "training_metadata.json",
    ]
    again = resume.AtomicBackupAndRestore(str(tmp_path / "backup"))
    again.set_model(model)
    again.on_train_begin()
    for restored, before in zip(model.get_weights(), saved, strict=True):
        np.testing.assert_array_equal(restored, before)
    assert model._initial_epoch == 1
