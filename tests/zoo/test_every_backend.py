"""The zoo on the backend this process runs (``KERAS_BACKEND``): run by ``tests/test_backends.py``
in a child pytest on JAX and PyTorch, which hands over a ``.keras`` file saved on TensorFlow and
takes back one saved on the child's backend (``LAMBDA_KERAS_EXCHANGE``)."""

import os
from pathlib import Path

import keras
import numpy as np
import pytest

from lambda_keras import zoo
from tests.backend import BACKEND, numpy
from tests.zoo.model_harness import build_small, check_calls, images, run_model_harness

EXCHANGE = os.environ.get("LAMBDA_KERAS_EXCHANGE")
pytestmark = pytest.mark.skipif(
    not EXCHANGE, reason="run on each backend by tests/test_backends.py"
)


def exchange_model() -> keras.Model:
    """The model both sides save and load: a LambdaResNet-50 with every implementation."""
    return zoo.LambdaResNet50(
        width_multiplier=0.125, input_shape=(32, 32, 3), classes=10, weights=None
    )


@pytest.mark.parametrize(
    "compile_setting",
    [
        "auto",
        pytest.param(
            "1", marks=[pytest.mark.slow, pytest.mark.torch_compiled, pytest.mark.backends("torch")]
        ),
    ],
)
def test_a_zoo_model_trains_and_predicts(compile_setting, monkeypatch):
    """The new user's first try (``fit`` failed on JAX: tf ops on tracers), with the steps a
    user gets (``auto``: on PyTorch, Keras' eager steps on a CPU and the compiled steps on a
    GPU). Under ``-m slow`` on PyTorch, compiled by Inductor on a CPU too: 711 s for this whole
    LambdaResNet-50 on 2 AVX2 cores, where tests/backend/test_torch_compiled_step.py traces the
    same model and compiles small ones with Inductor in the default run."""
    monkeypatch.setenv("LAMBDA_KERAS_TORCH_COMPILE", compile_setting)
    model = exchange_model()
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    x = images(batch=8)
    labels = np.arange(8) % 10
    history = model.fit(x, labels, batch_size=4, epochs=2, verbose=0)
    losses = history.history["loss"]
    assert np.isfinite(losses).all() and losses[1] < losses[0]
    assert model.predict(x, verbose=0).shape == (8, 10)


def test_keras_files_move_between_backends():
    folder = Path(EXCHANGE)
    data = np.load(folder / "tensorflow.npz")
    loaded = keras.saving.load_model(folder / "tensorflow.keras")
    np.testing.assert_allclose(
        loaded.predict(data["x"], verbose=0), data["y"], rtol=1e-4, atol=1e-5
    )
    model = exchange_model()
    x = images(batch=3, seed=5)
    model.save(folder / f"{BACKEND}.keras")
    np.savez(folder / f"{BACKEND}.npz", x=x, y=model.predict(x, verbose=0))


@pytest.mark.slow
def test_a_pyramid_backbone_gives_its_levels():
    backbone = zoo.LambdaResNetBackbone(
        50, input_shape=(64, 64, 3), width_multiplier=0.125, weights=None
    )
    outputs = backbone(images((64, 64, 3), batch=1), training=False)
    shapes = {level: tuple(numpy(x).shape[1:3]) for level, x in outputs.items()}
    assert shapes == {"P2": (16, 16), "P3": (8, 8), "P4": (4, 4), "P5": (2, 2)}


def test_detection_data_without_tensorflow_says_what_to_install():
    """The child runs with TensorFlow hidden: the model runs, reading data needs tf.data."""
    if BACKEND == "tensorflow":
        pytest.skip("the TensorFlow backend imports it")
    import lambda_keras.detection as detection

    assert callable(detection.detect) and callable(detection.ops.nms)
    with pytest.raises(ImportError, match=r"needs TensorFlow installed.*lambda-keras\[jax\]"):
        import lambda_keras.training.detection.datasets  # noqa: F401
    with pytest.raises(ImportError, match=r"detection.serving writes TensorFlow SavedModels"):
        import lambda_keras.detection.serving  # noqa: F401


def test_training_without_tensorflow_says_what_to_install():
    """The child runs with TensorFlow hidden: training's tf.data input needs it on any backend."""
    if BACKEND == "tensorflow":
        pytest.skip("the TensorFlow backend imports it")
    with pytest.raises(ImportError, match=r"needs TensorFlow installed.*lambda-keras\[jax\]"):
        import lambda_keras.training  # noqa: F401


# The harness in the default run on the convolutional depth-50 model of the ResNet family (whose
# blocks are those of every deeper model; on JAX its compiles cost 17 s, LambdaResNet-50's 42 s:
# the exchange model above trains, predicts and saves a LambdaResNet-50); every model under
# -m slow.
DEPTH_50 = ("resnet_rs50",)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=() if name in DEPTH_50 else pytest.mark.slow)
        for name in zoo.list_models()
    ],
)
def test_every_registered_model(name, tmp_path):
    if name.startswith(("resnet_rs", "lambda_resnet")) and any(
        str(d) in name for d in (101, 152, 200, 270, 350, 420)
    ):
        check_calls(build_small(name))  # deep models: the blocks of depth 50, built and called
    else:
        run_model_harness(name, tmp_path, run_eagerly=False)
