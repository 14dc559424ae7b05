"""Layers: LambdaLayer, its RelativePositionEmbedding, StochasticDepth."""

from lambda_keras.layers.lambda_layer import LambdaLayer
from lambda_keras.layers.position_lambdas import (
    conv_position_lambdas,
    depthwise_position_lambdas,
    einsum_position_lambdas,
)
from lambda_keras.layers.relative_position_embedding import RelativePositionEmbedding
from lambda_keras.layers.stochastic_depth import StochasticDepth

__all__ = [
    "LambdaLayer",
    "RelativePositionEmbedding",
    "StochasticDepth",
    "conv_position_lambdas",
    "depthwise_position_lambdas",
    "einsum_position_lambdas",
]
