"""The classification config: frozen, checked when made, and what a run resolves from it."""

import dataclasses

import pytest

from lambda_keras.training.classification import config as cfg
from lambda_keras.training.classification.config import ClassificationConfig
from lambda_keras.training.distribute import PlacementConfig


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        (dict(epochs=0), ValueError, "`epochs` must be a positive integer; received epochs=0"),
        (dict(image_size=16), ValueError, "`image_size` must be an integer >= 32"),
        (dict(crop_min_area=0.0), ValueError, r"`crop_min_area` must be a number in \(0.0, 1.0\]"),
        (dict(learning_rate=float("nan")), ValueError, "`learning_rate` must be a positive"),
        (dict(model="lambda_resnet_50"), ValueError, "Did you mean 'lambda_resnet50'"),
        (dict(dataset="folder:/no/such/dir"), ValueError, "needs an existing directory"),
        (dict(loop="keras"), ValueError, "`loop` must be one of 'auto', 'fit', 'custom'"),
        (dict(placement="one_device"), TypeError, "`placement` must be a PlacementConfig"),
    ],
)
def test_a_bad_setting_is_refused_when_the_config_is_made(kwargs, error, match):
    with pytest.raises(error, match=match):
        ClassificationConfig(**kwargs)


def test_the_config_is_frozen_and_unset_options_are_allowed():
    config = ClassificationConfig(epochs=None, warmup_epochs=None, width_multiplier=None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.epochs = 3
    assert dataclasses.replace(config, epochs=3).epochs == 3


def test_resolved_recipe_loop_and_flips():
    config = ClassificationConfig(warmup_epochs=0, learning_rate=0.5)
    recipe = cfg.resolve_recipe(config)
    assert (recipe.warmup_epochs, recipe.base_learning_rate) == (0, 0.5)
    assert cfg.resolve_loop(config) == "fit"
    multi = ClassificationConfig(placement=PlacementConfig("multi_worker"))
    assert cfg.resolve_loop(multi) == "custom"
    assert not cfg.flips(config)  # the digits are not mirror-symmetric
    assert cfg.flips(dataclasses.replace(config, dataset="cifar10"))


@pytest.mark.parametrize(
    "kwargs,backend,match",
    [
        (dict(loop="custom"), "jax", "--loop=custom is a tf.distribute"),
        (dict(placement=PlacementConfig("multi_worker"), loop="fit"), "tensorflow", "#20585"),
        (dict(placement=PlacementConfig("data_parallel")), "tensorflow", "needs --backend=jax"),
    ],
)
def test_what_the_backend_cannot_run_is_refused(kwargs, backend, match):
    with pytest.raises(ValueError, match=match):
        cfg.check_backend(ClassificationConfig(**kwargs), backend)
