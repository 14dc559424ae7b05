"""Resuming a killed run: the settings its backup was made with, checked before it starts again.

A run writes its settings to ``<model_dir>/run_settings.json`` when training starts. Started
again with the same ``model_dir`` while a backup of an unfinished run is there
(``<model_dir>/backup``), the settings must be the same: a backup made with another model,
width, data set, batch size or schedule either cannot be loaded (before, a raw Keras error
listing every layer that "could not be loaded") or would continue a different run silently.
[`check_resume`][lambda_keras.training.resume.check_resume] refuses it with an error naming each
setting that differs, before any model is built, and leaves the backup as it is.

The backup itself is
[`AtomicBackupAndRestore`][lambda_keras.training.resume.AtomicBackupAndRestore]: Keras'
``BackupAndRestore`` writing each file whole or not at all, so a run killed while it saves resumes
from the save before.
"""

from __future__ import annotations

import dataclasses
import glob
import json
import os
import tempfile
from collections.abc import Mapping

import keras

SETTINGS_FILE = "run_settings.json"
BACKUP_DIR = "backup"


def _normalised(settings: Mapping[str, object]) -> dict:
    return json.loads(json.dumps(dict(settings), sort_keys=True))  # tuples -> lists


# Settings every resumed run may change: where the files are, what is printed or exported, and
# where the run executes (strategy, TPU, hosts: the global batch stays the same).
ALWAYS_RESUMABLE = frozenset({"model_dir", "verbose", "export", "placement"})


def run_settings(config, resumable: frozenset[str], **resolved) -> dict:
    """The settings a killed run must be resumed with: the fields of the ``config`` dataclass
    but those in ``resumable`` (where the files are, what is printed, how the work is spread),
    with the defaults the run resolved (``resolved``, e.g. the recipe's epochs) in place."""
    fields = dataclasses.asdict(config)
    return {**{k: v for k, v in fields.items() if k not in resumable}, **resolved}


def has_backup(model_dir: str) -> bool:
    """Whether ``model_dir`` holds the backup of an unfinished run."""
    backup = os.path.join(model_dir, BACKUP_DIR)
    return os.path.isdir(backup) and any(os.scandir(backup))


def check_resume(model_dir: str, settings: Mapping[str, object]) -> None:
    """Raise ``ValueError`` when ``model_dir`` holds an unfinished run made with other settings.

    Args:
        model_dir: the run's directory.
        settings: the settings that must not change when a run resumes (JSON values), keyed by
            flag name.

    Nothing is checked when there is no backup (a new run, or a finished one: its backup is
    removed at the end) or when the backup predates the settings file.
    """
    path = os.path.join(model_dir, SETTINGS_FILE)
    if not has_backup(model_dir) or not os.path.isfile(path):
        return
    try:
        with open(path) as f:
            recorded = json.load(f)
    except (OSError, json.JSONDecodeError) as err:
        raise ValueError(
            f"--model_dir={model_dir} holds an unfinished run whose settings file {path} cannot "
            f"be read ({err}). Delete the file to resume anyway, or pass another --model_dir."
        ) from None
    current = _normalised(settings)
    differences = [
        f"--{name}={recorded.get(name)!r} there, {current.get(name)!r} now"
        for name in sorted(set(recorded) | set(current))
        if recorded.get(name) != current.get(name)
    ]
    if differences:
        raise ValueError(
            f"--model_dir={model_dir} holds an unfinished run (its backup in "
            f"{os.path.join(model_dir, BACKUP_DIR)}) made with other settings: "
            + "; ".join(differences)
            + ". Resume it with its settings, or pass another --model_dir for a new run "
            "(the backup is left as it is)."
        )


def record_settings(model_dir: str, settings: Mapping[str, object]) -> None:
    """Write ``settings`` to ``<model_dir>/run_settings.json`` (the run has started)."""
    os.makedirs(model_dir, exist_ok=True)
    path = os.path.join(model_dir, SETTINGS_FILE)
    with open(path + ".tmp", "w") as f:
        json.dump(_normalised(settings), f, indent=1)
    os.replace(path + ".tmp", path)  # a run killed while writing leaves the old file


class AtomicBackupAndRestore(keras.callbacks.BackupAndRestore):
    """``keras.callbacks.BackupAndRestore`` whose backup files are replaced atomically.

    Keras writes ``latest.weights.h5`` in place: a run killed during that write leaves a
    damaged file, and starting it again fails to open it (``OSError: bad object header``)
    instead of resuming. Here the weights and then the metadata are written to temporary files
    in the backup directory and moved over the old ones (``os.replace``); what a kill leaves
    behind is the previous complete backup (and a temporary file, removed at the next start).
    """

    def on_train_begin(self, logs=None):
        for leftover in glob.glob(os.path.join(self.backup_dir, "*.partial*")):
            os.remove(leftover)
        super().on_train_begin(logs)

    def _save_model(self):
        os.makedirs(self.backup_dir, exist_ok=True)
        weights = _temporary(self.backup_dir, ".weights.h5")
        metadata = _temporary(self.backup_dir, ".json")
        try:
            self.model.save_weights(filepath=weights, overwrite=True)
            with open(metadata, "w") as f:
                json.dump({"epoch": self._current_epoch, "batch": self._last_batch_seen}, f)
            os.replace(weights, self._weights_path)
            os.replace(metadata, self._training_metadata_path)
        finally:
            for path in (weights, metadata):
                if os.path.exists(path):
                    os.remove(path)


def _temporary(directory: str, suffix: str) -> str:
    fd, path = tempfile.mkstemp(prefix="latest.partial", suffix=suffix, dir=directory)
    os.close(fd)
    return path
