"""RelativePositionEmbedding: re-indexing, cropping, errors and config."""

import itertools

import keras
import numpy as np
import pytest

from lambda_keras.layers import RelativePositionEmbedding, relative_position_embedding
from tests.backend import numpy


def explicit_dense(table, spatial):
    """E[g, k, u, n, m] by looking each relative offset up, the slow obvious way."""
    window = table.shape[: len(spatial)]
    positions = list(itertools.product(*[range(s) for s in spatial]))
    g, k, u = table.shape[len(spatial) :]
    out = np.zeros((g, k, u, len(positions), len(positions)), table.dtype)
    for i, p in enumerate(positions):
        for j, q in enumerate(positions):
            index = np.subtract(q, p) + np.array(window) // 2
            if np.all(index >= 0) and np.all(index < window):
                out[..., i, j] = table[tuple(index)]
    return out


@pytest.mark.parametrize(
    "size,spatial,groups,intra_depth",
    [
        ((3, 5), (4, 6), 1, 1),
        ((7, 7), (3, 2), 2, 3),  # window larger than the map
        ((5,), (9,), 1, 2),
        ((11,), (4,), 3, 1),
    ],
)
def test_dense_matches_explicit_lookup(size, spatial, groups, intra_depth):
    emb = RelativePositionEmbedding(size, key_dim=3, intra_depth=intra_depth, groups=groups)
    emb.build()
    table = emb.embeddings.numpy()
    np.testing.assert_array_equal(numpy(emb.dense(spatial)), explicit_dense(table, spatial))
    rows = slice(2, 4)
    np.testing.assert_array_equal(
        numpy(emb.dense(spatial, rows=rows)), explicit_dense(table, spatial)[..., rows, :]
    )


@pytest.mark.parametrize(
    "size, spatial", [((3, 5), (4, 6)), ((7, 7), (3, 2)), ((23, 23), (14, 14)), ((5,), (9,))]
)
def test_a_map_of_known_size_takes_its_index_from_numpy_equal_to_the_ops(size, spatial):
    """Known lengths (ints): one NumPy constant per window and map, no op per call; lengths
    that are tensors: the same index computed with ``keras.ops``."""
    emb = RelativePositionEmbedding(size, key_dim=2, rank=len(size))
    emb.build()
    assert isinstance(relative_position_embedding._static_flat_index(size, spatial), np.ndarray)
    known = numpy(emb.flat_index(spatial))
    as_tensors = numpy(emb.flat_index([keras.ops.convert_to_tensor(n) for n in spatial]))
    assert known.dtype == as_tensors.dtype == np.int32
    np.testing.assert_array_equal(known, as_tensors)
    assert relative_position_embedding._static_lengths([4, np.int64(6)]) == (4, 6)
    assert relative_position_embedding._static_lengths([4, None]) is None


@pytest.mark.tensorflow
def test_dense_with_unknown_shape_in_a_graph():
    import tensorflow as tf

    emb = RelativePositionEmbedding((5, 3), key_dim=2)
    emb.build()
    fn = tf.function(lambda x: emb(x), input_signature=[tf.TensorSpec((None, None, None, 4))])
    out = numpy(fn(tf.zeros((1, 4, 3, 4))))
    np.testing.assert_array_equal(out, explicit_dense(emb.embeddings.numpy(), (4, 3)))


def test_window_is_cropped_to_the_offsets_a_map_can_hold():
    emb = RelativePositionEmbedding((23, 23), key_dim=2)
    emb.build()
    table = emb.embeddings.numpy()
    window = numpy(emb.window((7, 20)))
    assert window.shape == (13, 23, 1, 2, 1)
    np.testing.assert_array_equal(window, table[5:18])


@pytest.mark.tensorflow
def test_window_of_a_map_of_unknown_length_is_the_full_window():
    import tensorflow as tf

    emb = RelativePositionEmbedding((23, 23), key_dim=2)
    emb.build()
    assert emb.window((tf.constant(3), 20)).shape[0] == 23


def test_initialised_from_unit_normal():
    emb = RelativePositionEmbedding(31, key_dim=16)
    emb.build()
    values = emb.embeddings.numpy()
    assert values.shape == (31, 31, 1, 16, 1)
    assert abs(values.std() - 1.0) < 0.05 and abs(values.mean()) < 0.05


def test_max_extent_and_config_round_trip():
    emb = RelativePositionEmbedding(
        (27, 13), key_dim=8, intra_depth=2, groups=4, embeddings_regularizer="l2", name="shared"
    )
    assert emb.max_extent == (14, 7)
    clone = RelativePositionEmbedding.from_config(emb.get_config())
    assert clone.get_config() == emb.get_config()
    assert keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(emb)).size == (
        27,
        13,
    )


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(size=4), "size"),
        (dict(size=(3, 0)), "size"),
        (dict(size=(3, 3, 3)), "rank"),
        (dict(size=5, key_dim=0), "key_dim"),
        (dict(size=5, groups=-2), "groups"),
        (dict(size=5, rank=3), "rank"),
    ],
)
def test_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        RelativePositionEmbedding(**kwargs)


def test_error_wrong_number_of_spatial_axes():
    emb = RelativePositionEmbedding((5, 5), key_dim=2)
    emb.build()
    with pytest.raises(ValueError, match="rank=2"):
        emb.dense((4,))
