"""A finished run's files: model.keras, the task's SavedModel export of that file, labels.json."""

import json

import keras

from lambda_keras.training.export import export_run


def test_the_run_files_are_written_from_the_saved_model_file(tmp_path):
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    calls = []

    def export_keras_file(keras_path, path, image_size):
        calls.append((keras_path, path, image_size))
        loaded = keras.saving.load_model(keras_path)  # the file, whole, before the export
        assert loaded.count_params() == model.count_params()
        return path

    files = export_run(model, str(tmp_path), export_keras_file, 32, ["a", "b"], [5, 7])
    assert calls == [(str(tmp_path / "model.keras"), str(tmp_path / "saved_model"), 32)]
    assert files == {
        "keras": str(tmp_path / "model.keras"),
        "saved_model": str(tmp_path / "saved_model"),
        "labels": str(tmp_path / "labels.json"),
    }
    labels = json.loads((tmp_path / "labels.json").read_text())
    assert labels == {"class_names": ["a", "b"], "category_ids": [5, 7]}
