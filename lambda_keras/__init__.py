"""lambda_keras: LambdaNetworks (Bello, ICLR 2021) for Keras 3 on JAX, TensorFlow and PyTorch."""

__version__ = "0.1.0"

from lambda_keras import layers, zoo

__all__ = ["layers", "zoo", "__version__"]
