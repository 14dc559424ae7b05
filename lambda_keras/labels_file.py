"""``labels.json``: what a trained model's outputs mean, written beside its files (a training
run's ``model_dir``, a detector's SavedModel): ``class_names`` per output class and, for a model
trained on COCO-format data, each class's ``category_ids``."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

from lambda_keras import _validation as v

__all__ = ["LABELS_FILE", "is_category_id", "read_labels", "write_labels"]

LABELS_FILE = "labels.json"
"""The file's name in its directory."""


def is_category_id(value) -> bool:
    """Whether ``value`` is a category id: an integer >= 0 (NumPy's too), not a bool (Python
    counts ``True`` as 1: it would be written as category 1)."""
    return v.is_int(value) and value >= 0


def write_labels(
    directory: str, class_names: Sequence[str], category_ids: Sequence[int] | None = None
) -> str:
    """Write ``directory/labels.json``; returns its path.

    Args:
        directory: An existing directory.
        class_names: The name of each output class, in the model's order.
        category_ids: The COCO category id of each class (detection), or None.
    """
    labels: dict[str, list] = {"class_names": [str(name) for name in class_names]}
    if category_ids is not None:
        if len(category_ids) != len(class_names):
            raise ValueError(
                f"`category_ids` must give one id per class ({len(class_names)}); received "
                f"{len(category_ids)}."
            )
        labels["category_ids"] = [int(i) for i in category_ids]
    path = os.path.join(directory, LABELS_FILE)
    with open(path, "w") as f:
        json.dump(labels, f)
    return path


def read_labels(directory: str) -> dict:
    """The ``labels.json`` in ``directory``: ``{"class_names": [...]}`` and, when written,
    ``"category_ids"``."""
    with open(os.path.join(directory, LABELS_FILE)) as f:
        return json.load(f)
