"""The port of timm's LambdaResNet-26T in training mode, on PyTorch, against timm's model in
``train()``: batch norms normalize by the batch's own statistics (the project's
BatchNormalization: PyTorch's kernels on a CPU, lambda_keras/backend/torch_batch_norm.py). The
logits, the gradients of the input and of the stem's kernel, and the moving means after the
step equal timm's. Inference against timm is test_timm_equivalence.py (``-m slow``)."""

import numpy as np
import pytest

from lambda_keras import zoo
from lambda_keras.zoo import convert_timm

pytestmark = [pytest.mark.backends("torch"), pytest.mark.torch("timm")]

NAME = "lambda_resnet26t"  # a local lambda: any input size


def timm_model():
    """timm's model (random, seeded) with batch norms' scales and offsets away from 1 and 0."""
    import timm
    import torch

    torch.manual_seed(0)
    model = timm.create_model(NAME, pretrained=False)
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                module.weight.uniform_(0.5, 1.5, generator=generator)
                module.bias.uniform_(-0.2, 0.2, generator=generator)
    return model.train()


def state(model) -> dict[str, np.ndarray]:
    return {k: v.detach().contiguous().numpy() for k, v in model.state_dict().items()}


def keras_model(timm_state):
    model = zoo.get_model(NAME, input_shape=(64, 96, 3), classifier_activation=None)
    convert_timm.assign_checkpoint(model, timm_state, NAME)
    return model


def test_a_training_step_forward_and_backward_equals_timms_in_train_mode(monkeypatch):
    import keras
    import torch

    from lambda_keras.backend import torch_batch_norm
    from lambda_keras.layers.model_layers import all_layers

    monkeypatch.setattr(torch_batch_norm, "MIN_VALUES", 1)  # this small model's maps too
    calls = []
    original = torch_batch_norm.batch_norm_training
    monkeypatch.setattr(
        torch_batch_norm, "batch_norm_training", lambda *a: calls.append(a) or original(*a)
    )
    reference = timm_model()
    model = keras_model(state(reference))
    x = np.random.default_rng(0).normal(size=(2, 64, 96, 3)).astype("float32")  # landscape

    timm_x = torch.tensor(x).permute(0, 3, 1, 2).requires_grad_(True)
    expected = reference(timm_x)
    (expected**2).sum().backward()
    keras_x = torch.tensor(x, requires_grad=True)
    got = model(keras_x, training=True)
    (got**2).sum().backward()

    norms = [n for n in all_layers(model) if isinstance(n, keras.layers.BatchNormalization)]
    assert len(calls) == len(norms) > 30  # each through PyTorch's kernels
    scale = expected.abs().max().item()
    np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), atol=1e-5 * scale)
    expected_dx = timm_x.grad.permute(0, 2, 3, 1).numpy()
    dx = keras_x.grad.numpy()
    np.testing.assert_allclose(dx, expected_dx, atol=1e-4 * np.abs(expected_dx).max())
    kernel = model.get_layer("stem_1_conv").kernel.value.grad.numpy()  # [3, 3, 3, 24]
    expected_kernel = reference.stem.conv1.conv.weight.grad.permute(2, 3, 1, 0).numpy()
    np.testing.assert_allclose(kernel, expected_kernel, atol=1e-4 * np.abs(expected_kernel).max())

    # The moving means after the step, as timm's running means (its momentum 0.1 is Keras'
    # 0.9); timm's running variances are unbiased, Keras' moving variances are not.
    moved = {w.path: w.numpy() for w in keras_model(state(reference)).weights}
    means = {w.path: w.numpy() for w in model.weights if w.path.endswith("moving_mean")}
    assert len(means) > 30
    for path, mean in means.items():
        np.testing.assert_allclose(mean, moved[path], rtol=1e-4, atol=1e-5, err_msg=path)
