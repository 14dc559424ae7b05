"""The zoo inside keras-hub: the pyramid backbones as `keras_hub.models.Backbone` subclasses,
saved with keras-hub's `save_to_preset` and loaded with its own `from_preset` (the `[hub]`
extra: `pip install "lambda_keras[hub]"`).

keras-hub finds a preset's class by its registered name and imports no package it does not
know: `import lambda_keras.hub` registers these classes, so it comes before `from_preset`.
Nothing else in `lambda_keras` imports keras-hub.

* [`LambdaResNetBackbone`][lambda_keras.hub.backbones.LambdaResNetBackbone] and
  [`ResNetRSBackbone`][lambda_keras.hub.backbones.ResNetRSBackbone]
  ([`backbones`][lambda_keras.hub.backbones]): the zoo's pyramid backbones (P2-P5) as keras-hub
  feature-pyramid backbones.

keras-hub 0.32 requires Keras 3.15 or newer (the rest of the package: 3.10).
"""

try:
    import keras_hub  # noqa: F401
except ImportError as error:  # pragma: no cover - the message is tested in a child process
    raise ImportError(
        "lambda_keras.hub needs keras-hub, which is not installed: "
        'pip install "lambda_keras[hub]" (or pip install keras-hub).'
    ) from error

from lambda_keras.hub import backbones
from lambda_keras.hub.backbones import LambdaResNetBackbone, ResNetRSBackbone

__all__ = ["LambdaResNetBackbone", "ResNetRSBackbone", "backbones"]
