"""The training log a run writes (``log.csv``, Keras' ``CSVLogger``), as the tests read it."""

import csv
from pathlib import Path


def logged(model_dir, column: str) -> list[str]:
    """``column`` of every epoch logged so far, as written; ``[]`` before the first one ends."""
    path = Path(model_dir) / "log.csv"
    if not path.exists():
        return []
    with open(path) as f:
        return [row[column] for row in csv.DictReader(f)]
