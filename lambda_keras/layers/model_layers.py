"""Walking a model's layers, the ones Keras keeps inside lambda layers included."""

from __future__ import annotations

from collections.abc import Iterator

import keras

from lambda_keras.layers.lambda_layer import LambdaLayer

__all__ = ["all_layers"]


def all_layers(model: keras.Model) -> Iterator[keras.layers.Layer]:
    """Every layer of a functional model, nested models and lambda layers' norms included."""
    for layer in model.layers:
        if isinstance(layer, keras.Model):
            yield from all_layers(layer)
            continue
        yield layer
        if isinstance(layer, LambdaLayer):
            yield from (n for n in (layer.query_norm, layer.value_norm) if n is not None)
