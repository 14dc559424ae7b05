"""The detection config: frozen, checked when made; the run resolved before any data is read."""

import dataclasses

import pytest

from lambda_keras.training.detection.config import DetectionConfig, resolve_run
from lambda_keras.training.distribute import PlacementConfig


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(image_size=100), "`image_size` must be a multiple of 64"),
        (dict(depth=51), "`depth` must be one of 50"),
        (dict(depth=50.0), r"`depth` must be one of 50, .* \(an int\); received depth=50.0"),
        (dict(backbone="vit"), "`backbone` must be one of 'lambda_resnet'"),
        (dict(steps=0), "`steps` must be a positive integer"),
        (dict(width_multiplier=0), "`width_multiplier` must be a positive number"),
    ],
)
def test_a_bad_setting_is_refused_when_the_config_is_made(kwargs, match):
    with pytest.raises(ValueError, match=match):
        DetectionConfig(**kwargs)


def test_the_run_fills_in_the_recipe_defaults():
    config = DetectionConfig(steps=7)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.steps = 8
    run = resolve_run(config)
    assert run.steps == 7
    assert (run.image_size, run.batch_size) == (run.recipe.image_size, run.recipe.batch_size)


def test_multi_worker_is_refused_before_any_data_is_read():
    config = DetectionConfig(placement=PlacementConfig("multi_worker"))
    with pytest.raises(ValueError, match="keras-team/keras#20585"):
        resolve_run(config)
