"""Masked contexts (lambda_keras.layers.masking): the causal and context masks hide what they
hide, also from non-finite values, through the layer and in the mask functions themselves."""

import keras
import numpy as np
import pytest

from lambda_keras.layers import LambdaLayer
from lambda_keras.layers.masking import causal_window_mask, context_mask, select_finite_values
from tests.backend import numpy
from tests.layers.lambda_helpers import MASK_20, build_layer

IMPLEMENTATIONS = ["einsum", "conv", "depthwise"]
RNG = np.random.default_rng(2)


def test_the_causal_window_keeps_the_offsets_before_in_raster_order():
    kernel = causal_window_mask((3, 3))[..., 0, 0, 0]
    np.testing.assert_array_equal(kernel, [[1, 1, 1], [1, 1, 0], [0, 0, 0]])
    np.testing.assert_array_equal(causal_window_mask((5,))[..., 0, 0, 0], [1, 1, 1, 0, 0])


def test_the_context_mask_is_the_given_one_the_causal_one_or_none():
    given = np.eye(3, dtype=bool)
    np.testing.assert_array_equal(numpy(context_mask(given, False, 3, "float32")), np.eye(3))
    np.testing.assert_array_equal(
        numpy(context_mask(None, True, 3, "float32")), np.tril(np.ones((3, 3)))
    )
    assert context_mask(None, False, 3, "float32") is None


@pytest.mark.parametrize("causal", [True, False])
def test_selection_zeroes_non_finite_values_and_marks_the_queries_that_see_them(causal):
    values = np.ones((1, 3, 1, 1, 1), "float32")  # [b, m, g, v, u]
    values[0, 1] = np.nan
    mask = np.tril(np.ones((3, 3), "float32")) if causal else np.eye(3, dtype="float32")
    cleaned, poisoned = select_finite_values(
        keras.ops.convert_to_tensor(values), keras.ops.convert_to_tensor(mask), causal
    )
    np.testing.assert_array_equal(numpy(cleaned)[0, :, 0, 0, 0], [1, 0, 1])
    np.testing.assert_array_equal(numpy(poisoned)[0], [False, True, causal])


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_causal_output_does_not_depend_on_the_future(impl):
    x = RNG.normal(size=(2, 12, 8)).astype("float32")
    layer = LambdaLayer(8, key_dim=4, num_heads=2, scope_size=7, causal=True, implementation=impl)
    y = numpy(layer(x))
    for t in (0, 4, 10):
        perturbed = x.copy()
        perturbed[:, t + 1 :] += 100.0 * RNG.normal(size=perturbed[:, t + 1 :].shape)
        y2 = numpy(layer(perturbed))
        np.testing.assert_allclose(y2[:, : t + 1], y[:, : t + 1], rtol=1e-5, atol=1e-5)
        assert not np.allclose(y2[:, t + 1 :], y[:, t + 1 :])


def test_causal_images_use_raster_order():
    x = RNG.normal(size=(1, 4, 5, 8)).astype("float32")
    layer = LambdaLayer(8, key_dim=4, num_heads=2, scope_size=3, causal=True)
    y = numpy(layer(x))
    perturbed = x.copy()
    perturbed[:, 2, 3:] += 50.0  # row 2 from column 3 on, then rows 3+
    perturbed[:, 3:] += 50.0
    y2 = numpy(layer(perturbed)).reshape(1, 20, 8)
    np.testing.assert_allclose(y2[:, :13], y.reshape(1, 20, 8)[:, :13], rtol=1e-5, atol=1e-5)


def test_context_mask_blocks_masked_positions():
    x = RNG.normal(size=(1, 4, 5, 8)).astype("float32")
    layer = LambdaLayer(8, key_dim=4, num_heads=2, scope_size=None, context_mask=MASK_20)
    y = numpy(layer(x)).reshape(20, 8)
    flat = x.reshape(20, 8)
    for query in (0, 3, 7, 15):
        hidden = ~MASK_20[query]
        hidden[query] = False  # the query itself comes from this position
        perturbed = flat.copy()
        perturbed[hidden] += 100.0 * RNG.normal(size=perturbed[hidden].shape)
        y2 = numpy(layer(perturbed.reshape(1, 4, 5, 8))).reshape(20, 8)
        np.testing.assert_allclose(y2[query], y[query], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y[3], 0.0)  # an empty context gives a zero lambda


@pytest.mark.parametrize("bad", [np.nan, np.inf])
@pytest.mark.parametrize(
    "impl,kwargs",
    [
        ("einsum", dict(scope_size=3, causal=True)),
        ("conv", dict(scope_size=3, causal=True)),
        ("depthwise", dict(scope_size=3, causal=True)),
        ("einsum", dict(scope_size=None, causal=True)),
        ("einsum", dict(scope_size=None, context_mask=MASK_20)),
        ("einsum", dict(scope_size=3, context_mask=MASK_20, content=False)),
    ],
)
def test_masked_positions_cannot_leak_non_finite_values(impl, kwargs, bad):
    """A NaN/Inf at a masked position leaves the unmasked outputs exactly as they were."""
    x = RNG.normal(size=(2, 4, 5, 8)).astype("float32")
    layer = build_layer(x, implementation=impl, **kwargs)
    clean = numpy(layer(x, training=False)).reshape(2, 20, -1)
    poisoned_x = x.copy()
    poisoned_x[0, 3, 4] = bad  # the last position in raster order (19)
    y = numpy(layer(poisoned_x, training=False)).reshape(2, 20, -1)
    mask = np.tril(np.ones((20, 20), bool)) if layer.causal else MASK_20
    blind = ~mask[:, 19]  # queries that do not see position 19
    np.testing.assert_array_equal(y[0, blind], clean[0, blind])
    np.testing.assert_array_equal(y[1], clean[1])  # the other batch element
    assert np.isnan(y[0, ~blind]).all()  # queries that see it cannot have a finite output
