"""labels.json: written and read back, one id per class or none."""

import json

import numpy as np
import pytest

from lambda_keras.labels_file import LABELS_FILE, read_labels, write_labels


def test_class_names_alone_round_trip(tmp_path):
    path = write_labels(str(tmp_path), ["cat", "dog"])
    assert path == str(tmp_path / LABELS_FILE)
    assert json.loads((tmp_path / LABELS_FILE).read_text()) == {"class_names": ["cat", "dog"]}
    assert read_labels(str(tmp_path)) == {"class_names": ["cat", "dog"]}


def test_category_ids_are_kept_as_ints(tmp_path):
    import numpy as np

    write_labels(str(tmp_path), ["person", "car"], np.array([1, 3]))
    assert read_labels(str(tmp_path)) == {"class_names": ["person", "car"], "category_ids": [1, 3]}


def test_one_id_per_class(tmp_path):
    with pytest.raises(ValueError, match="one id per class \\(2\\); received 1"):
        write_labels(str(tmp_path), ["person", "car"], [1])
    assert not (tmp_path / LABELS_FILE).exists()


def test_a_category_id_is_an_integer_of_at_least_0_and_not_a_bool():
    from lambda_keras.labels_file import is_category_id

    assert all(is_category_id(i) for i in (0, 1, 90, np.int64(3), np.uint8(7)))
    assert not any(is_category_id(i) for i in (True, False, -1, 1.0, "1", None, np.float32(2)))
