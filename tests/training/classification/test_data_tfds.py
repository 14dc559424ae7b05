"""TFDS sources: a real builder prepared into a temporary ``data_dir`` (no download), TFDS's
mock data for the registered catalogue, and the errors raised before anything is fetched."""

import json

import numpy as np
import pytest

from lambda_keras.training.classification import ClassificationConfig, data, train

tfds = pytest.importorskip("tensorflow_datasets")

CLASSES = ["circle", "square", "triangle"]


class LambdaKerasToyShapes(tfds.core.GeneratorBasedBuilder):
    """40 training / 12 test RGB images of varied sizes in three classes, generated locally."""

    VERSION = tfds.core.Version("1.0.0")

    def _info(self):
        return self.dataset_info_from_configs(
            features=tfds.features.FeaturesDict(
                {
                    "image": tfds.features.Image(shape=(None, None, 3)),
                    "label": tfds.features.ClassLabel(names=CLASSES),
                }
            ),
            supervised_keys=("image", "label"),
        )

    def _split_generators(self, dl_manager):
        return {"train": self._generate_examples(40, 0), "test": self._generate_examples(12, 1)}

    def _generate_examples(self, count, seed):
        rng = np.random.default_rng(seed)
        for index in range(count):
            height, width = rng.integers(24, 48, size=2)
            image = rng.integers(0, 255, size=(height, width, 3), dtype=np.uint8)
            yield index, {"image": image, "label": index % len(CLASSES)}


def test_tfds_builder_prepared_locally(tmp_path):
    source = data.tfds_source("lambda_keras_toy_shapes", "train", data_dir=str(tmp_path))
    assert source.num_examples == 40 and source.class_names == CLASSES
    image, label = next(iter(source.dataset))
    assert image.dtype == "uint8" and image.shape[-1] == 3 and label.dtype == "int32"
    assert sorted({int(y) for _, y in source.dataset}) == [0, 1, 2]
    half = data.tfds_source("lambda_keras_toy_shapes", "train[:50%]", data_dir=str(tmp_path))
    assert half.num_examples == 20
    with pytest.raises(ValueError, match=r"has splits \['test', 'train'\]"):
        data.tfds_source("lambda_keras_toy_shapes", "validation", data_dir=str(tmp_path))


@pytest.mark.end_to_end
def test_trainer_on_a_tfds_data_set(tmp_path):
    result = train(
        ClassificationConfig(
            dataset="lambda_keras_toy_shapes",
            data_dir=str(tmp_path / "tfds"),
            model_dir=str(tmp_path / "run"),
            epochs=1,
            batch_size=8,
            width_multiplier=0.125,
            verbose=0,
        )
    )
    assert result["steps"] == 40 // 8
    labels = json.loads((tmp_path / "run" / "labels.json").read_text())
    assert labels == {"class_names": ["circle", "square", "triangle"]}
    assert result["model"].output_shape == (None, 3)


@pytest.mark.parametrize("name,channels", [("cifar10", 3), ("mnist", 1), ("imagenette/160px", 3)])
def test_catalogue_builders_with_mock_data(tmp_path, name, channels):
    with tfds.testing.mock_data(num_examples=6):
        source = data.tfds_source(name, "train", data_dir=str(tmp_path))
        images = [image for image, _ in source.dataset]
    assert source.num_examples == 6 and len(images) == 6 and source.num_classes == 10
    assert all(image.shape[-1] == 3 for image in images)  # grayscale made RGB


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(name="cifar_10"), "did you mean cifar10"),
        (dict(name="glue/cola"), "not an image classification data set"),
        (dict(name="imagenet2012", manual_dir="missing"), r"(?s)--manual_dir=.missing.*ILSVRC2012"),
    ],
)
def test_errors_before_any_download(tmp_path, kwargs, match):
    kwargs = {"split": "train", "data_dir": str(tmp_path), **kwargs}
    with pytest.raises(ValueError, match=match):
        data.tfds_source(**kwargs)
