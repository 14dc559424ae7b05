"""Layers: LambdaLayer, the convolution-style LambdaConv2D / LambdaConv1D, swap_convolutions,
RelativePositionEmbedding, StochasticDepth, and the BatchNormalization and AveragePooling2D they
and the zoo use."""

from lambda_keras.layers.average_pooling import AveragePooling2D
from lambda_keras.layers.batch_normalization import BatchNormalization
from lambda_keras.layers.lambda_conv import LambdaConv1D, LambdaConv2D
from lambda_keras.layers.lambda_layer import LambdaLayer
from lambda_keras.layers.position_lambdas import (
    conv_position_lambdas,
    depthwise_position_lambdas,
    einsum_position_lambdas,
)
from lambda_keras.layers.relative_position_embedding import RelativePositionEmbedding
from lambda_keras.layers.stochastic_depth import StochasticDepth
from lambda_keras.layers.swap_convolutions import swap_convolutions

__all__ = [
    "LambdaLayer",
    "LambdaConv2D",
    "LambdaConv1D",
    "swap_convolutions",
    "RelativePositionEmbedding",
    "StochasticDepth",
    "BatchNormalization",
    "AveragePooling2D",
    "conv_position_lambdas",
    "depthwise_position_lambdas",
    "einsum_position_lambdas",
]
