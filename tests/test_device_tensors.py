"""No tensor reaches NumPy implicitly: the library's paths under
[`tensors_off_the_host`][tests.device_tensors.tensors_off_the_host], where Keras' tensors refuse
implicit conversion as CUDA tensors do (PyTorch) and the project's code may convert a JAX array
only through ``keras.ops.convert_to_numpy`` (JAX): the torchvision converter's command line,
``detect``, ``fit`` of a zoo classifier and of a ``MaskRCNN``, evaluation,
``decode_predictions`` and saving. Run in the PyTorch and JAX children of tests/test_backends.py
(TensorFlow's tensors convert on every device: nothing to emulate there)."""

import subprocess
import sys

import keras
import numpy as np
import pytest

from tests.backend import NO_TENSORFLOW, child_env
from tests.device_tensors import tensors_off_the_host

pytestmark = pytest.mark.backends("jax", "torch")  # TensorFlow's convert on every device


def test_the_harness_refuses_what_a_gpu_refuses_and_allows_the_rest():
    tensor = keras.ops.arange(6, dtype="float32")
    variable = keras.Variable(np.ones(3, "float32"))
    with tensors_off_the_host():
        for implicit in (lambda: np.asarray(tensor), lambda: np.array(tensor)):
            with pytest.raises(TypeError, match="use keras.ops.convert_to_numpy"):
                implicit()
        if keras.backend.backend() == "torch":
            with pytest.raises(TypeError, match="off-host PyTorch tensor"):
                tensor - np.ones(6, "float32")  # noqa: B018  (NumPy converts the tensor)
            np.testing.assert_array_equal(tensor.detach().cpu().numpy(), np.arange(6))
            assert tensor.cpu().float().numpy().sum() == 15  # moved to the host first
            assert tensor.numpy(force=True).sum() == 15  # numpy's own move
            import torch

            assert torch.from_numpy(np.ones(2, "float32")).numpy().sum() == 2  # made there
        assert variable.numpy().sum() == 3  # Keras' own conversion
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(tensor), np.arange(6))
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(variable), np.ones(3))
        assert float(keras.ops.sum(tensor)) == 15 and tensor.tolist()[-1] == 5
        assert keras.ops.convert_to_numpy(tensor + np.float32(1))[0] == 1  # a NumPy scalar
    if not _on_a_gpu(tensor):  # where PyTorch's own refusal stays
        assert np.asarray(tensor).sum() == 15  # given back


def _on_a_gpu(tensor) -> bool:
    return keras.backend.backend() == "torch" and tensor.device.type != "cpu"


def test_detect_converts_nothing_implicitly():
    from lambda_keras.detection import detect
    from tests.detection.tiny import tiny_detector

    model = tiny_detector()
    photo = np.random.default_rng(0).integers(0, 256, (50, 70, 3), dtype="uint8")  # landscape
    with tensors_off_the_host():
        found = detect(model, photo, image_size=64)
        upright = detect(model, keras.ops.convert_to_tensor(photo.transpose(1, 0, 2)), 64)
    assert found["masks"].shape[1:] == (50, 70) and upright["masks"].shape[1:] == (70, 50)
    assert all(isinstance(value, np.ndarray) for value in found.values())


def test_a_mask_rcnn_fits_predicts_and_saves_without_implicit_conversions(tmp_path):
    from tests.detection.tiny import synthetic_batch, tiny_detector

    model = tiny_detector()
    images, targets = synthetic_batch(batch=2, size=64)
    model.compile(keras.optimizers.SGD(0.01))
    with tensors_off_the_host():
        history = model.fit(images, targets, batch_size=2, epochs=1, verbose=0).history
        losses = model.compute_losses(keras.ops.convert_to_tensor(images), targets)
        out = model.predict(images, verbose=0)
        model.save(tmp_path / "detector.keras")
    assert np.isfinite(history["loss"]).all() and len(losses) == 5
    assert all(np.isfinite(keras.ops.convert_to_numpy(loss)) for loss in losses.values())
    assert out["boxes"].shape[0] == 2


def test_a_classifier_fits_evaluates_decodes_and_saves_without_implicit_conversions(tmp_path):
    from lambda_keras import zoo
    from lambda_keras.zoo import lambda_resnet
    from tests.zoo.model_harness import small_kwargs

    model = zoo.get_model(
        "lambda_resnet50", input_shape=(32, 32, 3), classes=1000, **small_kwargs("lambda_resnet50")
    )
    x = np.random.default_rng(1).uniform(0, 255, (4, 32, 32, 3)).astype("float32")
    y = np.arange(4)
    loss = "sparse_categorical_crossentropy"
    model.compile(keras.optimizers.SGD(0.01), loss, metrics=["accuracy"])
    with tensors_off_the_host():
        history = model.fit(x, y, batch_size=2, epochs=1, verbose=0).history
        evaluated = model.evaluate(x, y, verbose=0, return_dict=True)
        decoded = lambda_resnet.decode_predictions(model(x, training=False), top=2)
        model.save(tmp_path / "classifier.keras")
        model.save_weights(tmp_path / "classifier.weights.h5")
        reloaded = keras.saving.load_model(tmp_path / "classifier.keras")
    assert np.isfinite(history["loss"]).all() and 0 <= evaluated["accuracy"] <= 1
    assert len(decoded) == 4 and len(decoded[0]) == 2
    np.testing.assert_allclose(
        reloaded.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-5, atol=1e-6
    )


# The converter's command line in a process of its own, under the harness, TensorFlow absent.
OFF_THE_HOST_CLI = (
    NO_TENSORFLOW
    + """
import runpy
from tests.device_tensors import tensors_off_the_host
module, sys.argv = sys.argv[1], sys.argv[1:]
with tensors_off_the_host():
    runpy.run_module(module, run_name="__main__")
"""
)


def test_the_torchvision_converter_command_line_converts_nothing_implicitly(tmp_path):
    safetensors_numpy = pytest.importorskip("safetensors.numpy")
    from tests.detection.torchvision.torchvision_states import random_state

    checkpoint = tmp_path / "maskrcnn.safetensors"
    safetensors_numpy.save_file(random_state("maskrcnn_resnet50_fpn"), str(checkpoint))
    output = tmp_path / "maskrcnn.weights.h5"
    command = [
        sys.executable, "-c", OFF_THE_HOST_CLI, "lambda_keras.detection.convert_torchvision",
        "--model=maskrcnn_resnet50_fpn", f"--checkpoint={checkpoint}", f"--output={output}",
    ]  # fmt: skip
    done = subprocess.run(
        command, env=child_env(keras.backend.backend()), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"Wrote {output}" in done.stdout and output.stat().st_size > 100_000_000
