"""An empty training batch leaves every moving statistic as it was (Keras' own layer turns them
into NaN, and every later prediction with them); the batch variance is the spread on every
backend; on PyTorch a large training batch takes PyTorch's batch norm kernels
(lambda_keras/backend/torch_batch_norm.py) and equals Keras' layer, other cases keep Keras'
formula."""

import keras
import numpy as np
import pytest

from lambda_keras import zoo
from lambda_keras.layers import BatchNormalization, LambdaLayer
from lambda_keras.layers.model_layers import all_layers
from tests.backend import numpy


def moving_statistics(model_or_layer) -> dict[str, np.ndarray]:
    return {
        v.path: np.array(v.numpy())
        for v in model_or_layer.non_trainable_weights
        if "moving" in v.path
    }


def test_an_empty_batch_leaves_the_statistics_and_a_full_one_updates_them():
    layer = BatchNormalization(momentum=0.5)
    x = np.random.default_rng(0).normal(3.0, 2.0, (8, 4, 4, 3)).astype("float32")
    layer(x, training=True)
    before = moving_statistics(layer)
    out = layer(np.zeros((0, 4, 4, 3), "float32"), training=True)
    assert tuple(out.shape) == (0, 4, 4, 3)
    after = moving_statistics(layer)
    for name in before:
        np.testing.assert_array_equal(after[name], before[name], err_msg=name)
    layer(x, training=True)
    mean = layer.moving_mean.numpy()
    np.testing.assert_allclose(mean, 0.25 * 0 + 0.75 * x.mean(axis=(0, 1, 2)), rtol=1e-5)


def test_a_batch_of_known_size_takes_no_snapshot_and_an_empty_one_does(monkeypatch):
    """The guard (a copy of each moving statistic, a size check, a select) runs only where a
    batch may be empty: the static shape of a batch of values rules it out."""
    from lambda_keras.layers import batch_normalization

    copies = []
    original = batch_normalization.ops.copy
    monkeypatch.setattr(
        batch_normalization.ops, "copy", lambda x: copies.append(x) or original(x)
    )
    layer = BatchNormalization()
    layer(np.ones((2, 3, 3, 4), "float32"), training=True)
    assert copies == []
    layer(np.zeros((0, 3, 3, 4), "float32"), training=True)
    assert len(copies) == 2  # the moving mean and variance, kept


def test_the_batch_variance_of_large_values_is_their_spread_on_every_backend():
    """Values of 1e4 +- 0.5: ``E[x^2] - E[x]^2`` (Keras on PyTorch) cancels in float32 to a
    variance off by several units, often negative, and the output is NaN."""
    rng = np.random.default_rng(0)
    x = (1e4 + rng.uniform(-0.5, 0.5, (2, 1, 1, 64))).astype("float32")
    layer = BatchNormalization(momentum=0.0)  # the moving variance is the batch's
    out = numpy(layer(x, training=True))
    assert np.isfinite(out).all()
    expected = np.var(x.astype("float64"), axis=(0, 1, 2))
    np.testing.assert_allclose(numpy(layer.moving_variance), expected, rtol=1e-3, atol=1e-5)


@pytest.mark.tensorflow
def test_inside_a_compiled_function_with_an_unknown_batch():
    import tensorflow as tf

    layer = BatchNormalization()
    layer.build((None, 5))
    before = moving_statistics(layer)

    @tf.function(input_signature=[tf.TensorSpec((None, 5), tf.float32)])
    def step(x):
        return layer(x, training=True)

    step(tf.zeros((0, 5)))
    for name, value in moving_statistics(layer).items():
        np.testing.assert_array_equal(value, before[name], err_msg=name)
    step(tf.ones((4, 5)))
    assert not np.array_equal(layer.moving_mean.numpy(), before[layer.moving_mean.path])


def test_the_lambda_layers_batch_norms_survive_an_empty_batch():
    layer = LambdaLayer(16, key_dim=8, num_heads=2, scope_size=3)
    x = np.random.default_rng(1).normal(size=(2, 6, 6, 8)).astype("float32")
    expected = numpy(layer(x, training=False))
    before = moving_statistics(layer)
    assert before  # query and value batch norms
    assert tuple(layer(x[:0], training=True).shape) == (0, 6, 6, 16)
    for name, value in moving_statistics(layer).items():
        np.testing.assert_array_equal(value, before[name], err_msg=name)
    np.testing.assert_array_equal(numpy(layer(x, training=False)), expected)


@pytest.mark.parametrize(
    "build",
    [
        lambda: zoo.LambdaResNet50(width_multiplier=0.125, input_shape=(32, 32, 3), classes=3),
        lambda: zoo.LambdaMobileNetV2(alpha=0.35, input_shape=(32, 32, 3), classes=3),
    ],
    ids=["lambda_resnet50", "lambda_mobilenet_v2"],
)
def test_zoo_models_are_never_poisoned_by_an_empty_training_batch(build):
    model = build()
    batch_norms = [
        layer for layer in all_layers(model) if isinstance(layer, keras.layers.BatchNormalization)
    ]
    assert batch_norms and all(isinstance(n, BatchNormalization) for n in batch_norms)
    x = np.random.default_rng(2).uniform(0, 1, (2, 32, 32, 3)).astype("float32")
    expected = model.predict(x, verbose=0)
    try:
        model(x[:0], training=True)
    except Exception as err:
        # The model itself fails loudly on an empty batch under TensorFlow, by the CPU: with
        # oneDNN (AVX-512 CPUs) conv2d returns its input's shape for an empty batch (tf.nn.conv2d
        # on [0, 34, 34, 3] gives [0, 34, 34, 3]) and the next layer refuses it; without it
        # (AVX2) Keras 3.15's ops.add takes two [0, 1, 1, c] tensors for a bias add ("Biases
        # must be 1D: [0,c]") at the 1x1 map's residual sum.
        assert "incompatible with the layer" in str(err) or "Biases must be 1D" in str(err), err
    got = model.predict(x, verbose=0)
    assert np.isfinite(got).all()
    np.testing.assert_array_equal(got, expected)


def training_calls(layer, x, calls=2):
    """The outputs' dtype, outputs, the gradients of the inputs and of the trainable weights,
    and the moving statistics after ``calls`` training calls of ``layer`` on ``x`` (PyTorch)."""
    import torch

    results = []
    for _ in range(calls):
        x_ = torch.tensor(x, requires_grad=True)
        y = layer(x_, training=True)
        results.append(str(y.dtype))
        weights = torch.linspace(-1, 1, y.numel()).reshape(y.shape).to(y.dtype)
        leaves = [x_, *(v.value for v in layer.trainable_variables)]
        gradients = torch.autograd.grad((y * weights).sum(), leaves)
        results += [y.detach().float().numpy(), *(g.float().numpy() for g in gradients)]
    return results + [numpy(v).astype("float32") for v in layer.non_trainable_variables]


def twins(policy: str, **arguments):
    """The project's layer and Keras' own with the same arguments and weights."""
    arguments = {"momentum": 0.7, **arguments}
    ours = BatchNormalization(dtype=policy, **arguments)
    keras_own = keras.layers.BatchNormalization(dtype=policy, **arguments)
    rng = np.random.default_rng(1)
    for layer in (ours, keras_own):
        layer.build((2, 5, 7, 6))
    weights = [rng.uniform(0.5, 1.5, w.shape).astype("float32") for w in ours.get_weights()]
    for layer in (ours, keras_own):
        layer.set_weights(weights)
    return ours, keras_own


def count_operator_calls(monkeypatch, min_values: int = 1) -> list:
    """The calls of PyTorch's kernels from now on, for maps of at least ``min_values`` values
    (the tests' small maps too, by default)."""
    from lambda_keras.backend import torch_batch_norm

    monkeypatch.setattr(torch_batch_norm, "MIN_VALUES", min_values)
    calls = []
    original = torch_batch_norm.batch_norm_training
    monkeypatch.setattr(
        torch_batch_norm, "batch_norm_training", lambda *a: calls.append(a) or original(*a)
    )
    return calls


@pytest.mark.backends("torch")
@pytest.mark.parametrize(
    "policy, arguments",
    [
        ("float32", {}),
        ("mixed_float16", {}),
        ("mixed_bfloat16", {"epsilon": 1e-5}),
        ("float32", {"scale": False, "center": False}),
        ("float32", {"axis": 3}),
        ("float32", {"momentum": 0.0}),  # the moving statistics are the batch's (torch.lerp)
        ("float32", {"momentum": 1.0}),  # they stay
    ],
)
def test_on_pytorch_a_training_batch_takes_its_kernels_and_equals_keras_layer(
    policy, arguments, monkeypatch
):
    """Outputs, gradients (inputs, scale, offset) and moving statistics after two training
    calls equal Keras' own layer's, and the batch went through PyTorch's kernels
    (lambda_keras/backend/torch_batch_norm.py)."""
    calls = count_operator_calls(monkeypatch)
    ours, keras_own = twins(policy, **arguments)
    x = np.random.default_rng(0).normal(3.0, 2.0, (2, 5, 7, 6)).astype("float32")
    x[..., 1] = -1.0  # a constant channel
    got, expected = training_calls(ours, x), training_calls(keras_own, x)
    assert len(calls) == 2
    assert len(got) == len(expected) == 2 * (3 + len(ours.trainable_variables)) + 2
    dtype = f"torch.{keras.mixed_precision.Policy(policy).compute_dtype}"
    assert got[0] == expected[0] == dtype  # the outputs' dtype, as Keras' layer gives them
    tolerance = 1e-5 if policy == "float32" else 1e-2
    for index, (a, b) in enumerate(zip(got, expected, strict=True)):
        if isinstance(a, str):
            assert a == b, f"result {index}"
            continue
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=tolerance, atol=tolerance, err_msg=f"result {index}")


@pytest.mark.backends("torch")
def test_on_pytorch_small_maps_keep_keras_formula_when_traced(monkeypatch):
    """Traced (a compiled step), a map of fewer than ``MIN_VALUES`` values (its default) keeps
    Keras' formula, which Inductor fuses with the layers around it; one of that many takes
    PyTorch's kernels. Eagerly every map takes them: the formula is a dozen operators."""
    import torch
    from torch.fx.experimental.proxy_tensor import make_fx

    from lambda_keras.backend.torch_batch_norm import MIN_VALUES

    calls = count_operator_calls(monkeypatch, MIN_VALUES)
    for shape, taken in (((2, 8, 8, 32), 0), ((2, 16, 16, MIN_VALUES // 512), 1)):
        layer = BatchNormalization()
        layer.build(shape)
        variables = [v.value.detach() for v in layer.variables]

        def step(x, *variables, layer=layer):
            return layer.stateless_call(variables[:2], variables[2:], x, training=True)[0]

        make_fx(step, tracing_mode="fake")(torch.ones(shape), *variables)
        assert len(calls) == taken, shape
        calls.clear()
    BatchNormalization()(np.ones((2, 8, 8, 32), "float32"), training=True)
    BatchNormalization()(np.ones((64, 1, 1, 4), "float32"), training=True)
    assert len(calls) == 2


@pytest.mark.backends("torch")
def test_on_pytorch_other_cases_keep_keras_formula(monkeypatch):
    """A 3-D batch, a batch norm over another axis, and the whole project's channels-last
    functions turned off (``LAMBDA_KERAS_TORCH_CHANNELS_LAST=0``) normalize as Keras' layer."""
    from lambda_keras.backend import torch_channels_last

    calls = count_operator_calls(monkeypatch)
    x = np.random.default_rng(0).normal(3.0, 2.0, (2, 5, 6)).astype("float32")
    ours = BatchNormalization()
    keras_own = keras.layers.BatchNormalization()
    for a, b in zip(training_calls(ours, x), training_calls(keras_own, x), strict=True):
        if isinstance(a, str):  # the outputs' dtype
            assert a == b
        else:
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    maps = x[..., None].repeat(2, axis=-1)  # [2, 5, 6, 2]
    BatchNormalization(axis=1)(maps, training=True)
    BatchNormalization(renorm=True)(maps, training=True)
    BatchNormalization()(maps, training=True, mask=np.ones(maps.shape[:-1], bool))
    monkeypatch.setattr(torch_channels_last, "installed", lambda name: False)
    BatchNormalization()(maps, training=True)
    assert calls == []


@pytest.mark.backends("torch")
def test_on_pytorch_a_training_call_without_a_gradient_equals_keras_layer(monkeypatch):
    """A training call under ``torch.no_grad`` (statistics only, no gradient) takes PyTorch's
    kernels too: the same outputs and moving statistics as Keras' layer."""
    import torch

    calls = count_operator_calls(monkeypatch)
    ours, keras_own = twins("float32")
    x = torch.tensor(np.random.default_rng(0).normal(3.0, 2.0, (2, 5, 7, 6)).astype("float32"))
    with torch.no_grad():
        got, expected = ours(x, training=True), keras_own(x, training=True)
    assert len(calls) == 1
    np.testing.assert_allclose(numpy(got), numpy(expected), rtol=1e-5, atol=1e-5)
    for a, b in zip(ours.non_trainable_variables, keras_own.non_trainable_variables, strict=True):
        np.testing.assert_allclose(numpy(a), numpy(b), rtol=1e-5, atol=1e-6)


EPSILON = r"`epsilon` must be a number in \[0\.0, inf\]; received "
MOMENTUM = r"`momentum` must be a number in \[0\.0, 1\.0\]; received "


@pytest.mark.parametrize(
    "arguments, match",
    [
        ({"epsilon": -1.0}, EPSILON + r"epsilon=-1\.0"),
        ({"epsilon": float("nan")}, EPSILON + r"epsilon=nan"),
        ({"epsilon": float("inf")}, EPSILON + r"epsilon=inf"),
        ({"momentum": 2.0}, MOMENTUM + r"momentum=2\.0"),
        ({"momentum": -0.1}, MOMENTUM + r"momentum=-0\.1"),
    ],
)
def test_a_bad_momentum_or_epsilon_is_refused_by_name(arguments, match):
    """A negative epsilon made every output NaN, a momentum above 1 moving statistics that
    grow at each step: both refused when the layer is made."""
    with pytest.raises(ValueError, match=match):
        BatchNormalization(**arguments)


def test_the_edges_of_momentum_and_epsilon_are_taken():
    """``epsilon=0`` (torchvision's frozen batch norm) and momentum 0 or 1 are allowed."""
    for arguments in ({"epsilon": 0.0}, {"momentum": 0.0}, {"momentum": 1.0}):
        layer = BatchNormalization(**arguments)
        assert layer.get_config()[next(iter(arguments))] == next(iter(arguments.values()))
        assert type(keras.layers.deserialize(keras.layers.serialize(layer))) is BatchNormalization
