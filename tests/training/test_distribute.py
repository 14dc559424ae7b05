"""Strategy selection; a real 2-replica MirroredStrategy on two logical CPUs (subprocess)."""

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from lambda_keras.training.distribute import make_strategy

ROOT = Path(__file__).resolve().parents[2]


def test_unknown_strategy():
    with pytest.raises(ValueError, match="--strategy must be one of"):
        make_strategy("horovod")


def test_missing_tpu_fails_fast_naming_the_flag():
    start = time.perf_counter()
    with pytest.raises(ValueError, match="--tpu"):
        make_strategy("tpu")
    with pytest.raises(ValueError, match="--tpu=local"):
        make_strategy("tpu", tpu="local")
    assert time.perf_counter() - start < 30


def test_multi_worker_needs_tf_config(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    with pytest.raises(ValueError, match="TF_CONFIG"):
        make_strategy("multi_worker")
    monkeypatch.setenv("TF_CONFIG", "{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        make_strategy("multi_worker")


def test_default_and_one_device():
    assert make_strategy("auto").num_replicas_in_sync == 1
    assert make_strategy("one_device").num_replicas_in_sync == 1


@pytest.mark.end_to_end
def test_mirrored_trains_a_lambda_model_on_two_logical_cpus():
    script = textwrap.dedent(
        """
        import os
        import tensorflow as tf
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
        import keras, numpy as np
        from lambda_keras import zoo
        from lambda_keras.training.classification import data
        from lambda_keras.training.distribute import make_strategy
        strategy = make_strategy("mirrored")
        print("replicas", strategy.num_replicas_in_sync)
        ds = data.make_dataset(data.digits_source("test"), training=True, image_size=32,
                               global_batch_size=32)
        with strategy.scope():
            model = zoo.LambdaResNet50C4(input_shape=(32, 32, 3), classes=10,
                                         width_multiplier=0.25)
            model.compile(optimizer="sgd", loss="categorical_crossentropy")
        history = model.fit(ds, epochs=2, verbose=0)
        print("losses", *history.history["loss"])
        """
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "2"}
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=600, env=env
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "replicas 2" in result.stdout
    losses = [float(v) for v in result.stdout.split("losses")[1].split()]
    assert len(losses) == 2 and all(0 < v < 10 for v in losses)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(strategy="gpus"), "`strategy` must be one of 'auto'"),
        (dict(num_processes=0), "`num_processes` must be a positive integer"),
        (dict(process_id=-1), "`process_id` must be an integer >= 0"),
    ],
)
def test_placement_config_is_checked_when_made(kwargs, match):
    from lambda_keras.training.distribute import PlacementConfig

    with pytest.raises(ValueError, match=match):
        PlacementConfig(**kwargs)


def test_placement_config_is_frozen_and_makes_the_placement():
    import dataclasses

    from lambda_keras.training.distribute import PlacementConfig

    config = PlacementConfig(strategy="one_device")
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.strategy = "auto"
    placement = config.make()
    assert placement.replicas == 1 and placement.chief
