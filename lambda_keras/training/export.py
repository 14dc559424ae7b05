"""A finished run's files, the same for every task: ``model.keras``, a serving SavedModel
written from it (in this process on TensorFlow, else by a TensorFlow child process: the serving
graph is TensorFlow's) and ``labels.json``
([`lambda_keras.labels_file`][lambda_keras.labels_file])."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

import keras

from lambda_keras.labels_file import write_labels

__all__ = ["export_run"]


def export_run(
    model: keras.Model,
    model_dir: str,
    export_keras_file: Callable[[str, str, int], str],
    image_size: int,
    class_names: Sequence[str],
    category_ids: Sequence[int] | None = None,
) -> dict:
    """Save ``model`` to ``model_dir/model.keras``, export it to ``model_dir/saved_model`` with
    the task's ``export_keras_file(keras_path, path, image_size)`` and write
    ``model_dir/labels.json``.

    Returns:
        The paths: ``keras``, ``saved_model`` and ``labels``.
    """
    keras_path = os.path.join(model_dir, "model.keras")
    model.save(keras_path)
    saved_model = export_keras_file(keras_path, os.path.join(model_dir, "saved_model"), image_size)
    labels = write_labels(model_dir, class_names, category_ids)
    return {"keras": keras_path, "saved_model": saved_model, "labels": labels}
