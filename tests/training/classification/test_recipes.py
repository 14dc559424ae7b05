"""The 90ep / 350ep recipes: schedule, EMA, L2, batch-norm decay, Table 20."""

import keras
import numpy as np
import pytest

from lambda_keras import zoo
from lambda_keras.layers import LambdaLayer
from lambda_keras.training.classification import recipes


def table20(model, image_size):
    row = zoo.model_info(model).table20_row(image_size)
    return (row.randaugment_magnitude, row.dropout_rate, row.stochastic_depth_rate)


def test_table20_rows_and_nearest():
    assert table20("lambda_resnet350", 320) == (15, 0.3, 0.2)
    assert table20("lambda_resnet101", 160) == (10, 0.3, 0.0)
    assert table20("resnet_rs200", 256) == (15, 0.3, 0.1)  # 200 is not listed: 152's row
    assert table20("lambda_resnet50_c4", 224) == (10, 0.2, 0.0)
    assert zoo.model_info("mobilenet_v2").table20_row(224) is None


@pytest.mark.parametrize(
    "recipe,model,magnitude,regularization",
    [
        ("90ep", "lambda_resnet152", None, dict(dropout_rate=0.0, stochastic_depth_rate=0.0)),
        ("350ep", "lambda_resnet152", 15, dict(dropout_rate=0.3, stochastic_depth_rate=0.1)),
        ("350ep", "resnet50", 10, {}),  # outside Table 20: the builder's own defaults
        ("90ep", "mobilenet_v2", None, {}),
    ],
)
def test_recipes_read_table20_from_the_registry(recipe, model, magnitude, regularization):
    info = zoo.model_info(model)
    assert recipes.RECIPES[recipe].randaugment_magnitude(info, 224) == magnitude
    assert recipes.RECIPES[recipe].model_regularization(info, 224) == regularization


def test_90ep_schedule_warms_up_then_decays():
    recipe = recipes.RECIPES["90ep"]
    optimizer = recipe.optimizer(global_batch_size=1024, steps_per_epoch=100)
    schedule = optimizer._learning_rate
    peak = 0.1 * 1024 / 256
    assert float(schedule(0)) == 0.0
    assert float(schedule(250)) == pytest.approx(peak / 2, rel=1e-3)
    assert float(schedule(500)) == pytest.approx(peak, rel=1e-3)
    assert float(schedule(9000)) < 1e-3 * peak
    assert optimizer.momentum == 0.9 and optimizer.use_ema
    assert optimizer.ema_momentum == pytest.approx(1 - 10 / 9000)  # capped: 9,000 steps
    long_run = recipe.optimizer(global_batch_size=4096, steps_per_epoch=312)
    assert long_run.ema_momentum == pytest.approx(0.9999)  # ImageNet: 28,080 steps


def test_short_runs_cap_the_averages():
    assert recipes.capped_decay(0.9999, 100) == pytest.approx(0.9)
    assert recipes.capped_decay(0.9999, 660) == pytest.approx(1 - 10 / 660)
    assert recipes.capped_decay(0.9999, 10_000) == 0.9999  # as long as its average
    assert recipes.capped_decay(0.9, 1_000_000) == 0.9


def test_prepare_regularizes_kernels_and_sets_batch_norm_decay():
    model = zoo.LambdaResNet50C4(input_shape=(32, 32, 3), classes=3, width_multiplier=0.25)
    recipes.RECIPES["350ep"].prepare(model, total_steps=1_000_000)
    lambda_layer = next(lay for lay in model.layers if isinstance(lay, LambdaLayer))
    assert lambda_layer.qkv_kernel.regularizer.l2 == pytest.approx(4e-5)
    assert lambda_layer.query_norm.momentum == pytest.approx(0.9999)
    assert lambda_layer.position_embedding.embeddings.regularizer is None
    assert model.get_layer("predictions").kernel.regularizer is not None
    model(np.zeros((1, 32, 32, 3), "float32"))
    kernels = [
        w for w in model.trainable_weights if "kernel" in w.path and "embeddings" not in w.path
    ]
    assert len(model.losses) == len(kernels) > 50
    assert isinstance(recipes.RECIPES["90ep"].loss(), keras.losses.CategoricalCrossentropy)
