"""Input pipelines: sources, preprocessing, batching, determinism."""

import numpy as np
import pytest
import tensorflow as tf

from lambda_keras import preprocessing
from lambda_keras.training.classification import data


def test_digits_source_is_real_and_split():
    train, test = data.digits_source("train"), data.digits_source("test")
    assert (train.num_examples, test.num_examples) == (1437, 360)
    assert train.class_names == [str(d) for d in range(10)]
    image, label = next(iter(train.dataset))
    assert image.shape == (32, 32, 3) and image.dtype == tf.uint8
    assert 0 <= int(label) < 10 and int(tf.reduce_max(image)) > 100
    labels = np.array([int(y) for _, y in test.dataset])
    assert set(labels) == set(range(10))


def test_folder_source(tmp_path):
    rng = np.random.default_rng(0)
    for name, count in (("cat", 3), ("dog", 2)):
        (tmp_path / name).mkdir()
        for i in range(count):
            pixels = rng.integers(0, 255, size=(20 + i, 30, 3), dtype=np.uint8)
            (tmp_path / name / f"{i}.png").write_bytes(tf.io.encode_png(pixels).numpy())
    (tmp_path / "dog" / "notes.txt").write_text("not an image")
    source = data.folder_source(str(tmp_path))
    assert source.class_names == ["cat", "dog"] and source.num_examples == 5
    labels = sorted(int(y) for _, y in source.dataset)
    assert labels == [0, 0, 0, 1, 1]
    with pytest.raises(ValueError, match="does not exist"):
        data.folder_source(str(tmp_path / "missing"))


@pytest.mark.parametrize("training", [True, False])
def test_make_dataset_shapes_and_normalisation(training):
    source = data.digits_source("test")
    ds = data.make_dataset(source, training=training, image_size=24, global_batch_size=16)
    images, labels = next(iter(ds))
    assert images.shape == (16, 24, 24, 3) and images.dtype == tf.float32
    assert labels.shape == (16, 10)
    np.testing.assert_allclose(labels.numpy().sum(axis=1), 1.0)
    # ImageNet normalisation: black pixels map to -mean/std.
    assert float(tf.reduce_min(images)) == pytest.approx(-0.485 / 0.229, abs=0.05)
    sizes = [int(x.shape[0]) for x, _ in ds]
    assert sum(sizes) == (352 if training else 360)  # training drops the remainder


def test_training_pipeline_is_deterministic_with_a_seed():
    source = data.digits_source("test")

    def first_batch(seed):
        ds = data.make_dataset(
            source,
            training=True,
            image_size=32,
            global_batch_size=8,
            seed=seed,
            deterministic=True,
            randaugment_magnitude=10,
        )
        return next(iter(ds))[0].numpy()

    np.testing.assert_array_equal(first_batch(1), first_batch(1))
    assert not np.array_equal(first_batch(1), first_batch(2))


def test_eval_center_crop_is_the_centre():
    image = np.zeros((40, 60, 3), "uint8")
    image[10:30, 20:40] = 255  # a bright centre square
    out = preprocessing.center_crop(tf.constant(image, tf.float32), 20, crop_fraction=1.0).numpy()
    assert out.shape == (20, 20, 3)
    assert out[5:15, 5:15].min() > 200 and out[:, :2].max() < 30


def test_mixup_and_cutmix_soften_labels():
    source = data.digits_source("test")
    for kwargs in (
        dict(mixup_alpha=0.2),
        dict(cutmix_alpha=1.0),
        dict(mixup_alpha=0.2, cutmix_alpha=1.0),
    ):
        ds = data.make_dataset(source, training=True, image_size=32, global_batch_size=32, **kwargs)
        _, labels = next(iter(ds))
        np.testing.assert_allclose(labels.numpy().sum(axis=1), 1.0, rtol=1e-5)
        assert (labels.numpy().max(axis=1) < 1.0).any()


def test_randaugment_factor_and_errors():
    assert data.randaugment_factor(15) == 0.5
    assert data.randaugment_factor(45) == 1.0
    with pytest.raises(ValueError, match="split"):
        data.digits_source("validation")
    with pytest.raises(ValueError, match="global_batch_size"):
        data.make_dataset(
            data.digits_source("test"), training=False, image_size=32, global_batch_size=0
        )
