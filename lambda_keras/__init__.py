"""lambda_keras: LambdaNetworks (Bello, ICLR 2021) for Keras 3 on JAX, TensorFlow and PyTorch."""

__version__ = "0.1.0"

from lambda_keras.backend import onednn as _onednn
from lambda_keras.backend import triton_first as _triton_first

# Before Keras imports TensorFlow, which reads the variable once (lambda_keras/backend/onednn.py).
_onednn.prefer_onednn()
# Before Keras too: PyTorch's Triton loaded after TensorFlow 2.20-2.21 crashes the interpreter
# (lambda_keras/backend/triton_first.py). How it was loaded, or None: the tests read it.
_triton_loaded = _triton_first.load_triton_first()

import keras as _keras  # noqa: E402

from lambda_keras.backend import requirements as _requirements  # noqa: E402

if _keras.backend.backend() == "torch":  # before anything is built on too old a PyTorch
    _requirements.require_torch_floor()

from lambda_keras import layers, zoo  # noqa: E402
from lambda_keras.backend import torch_channels_last as _torch_channels_last  # noqa: E402

# Keras' PyTorch convolution, max-pooling and batch norm without their layout copies
# (lambda_keras/backend/torch_channels_last.py; LAMBDA_KERAS_TORCH_CHANNELS_LAST=0 keeps Keras').
_torch_channels_last.install()

# keras-hub finds a preset's class by its registered name and imports no package itself: where
# keras-hub is installed (the [hub] extra), importing lambda_keras registers the classes of
# lambda_keras.hub, so that keras-hub's own from_preset loads the project's presets.
try:
    import keras_hub as _keras_hub  # noqa: E402, F401
except ImportError:  # the extra is not installed: lambda_keras.hub says how to install it
    pass
else:
    from lambda_keras import hub  # noqa: E402, F401

__all__ = ["layers", "zoo", "__version__"]
