"""The zoo inside keras-hub: its backbones, image classifiers and ImageNet weights as keras-hub
classes and presets, saved with keras-hub's `save_to_preset` and loaded with its own
`from_preset` (the `[hub]` extra: `pip install "lambda_keras[hub]"`).

keras-hub finds a preset's class by its registered name and imports no package it does not
know: `import lambda_keras` (where keras-hub is installed) or `import lambda_keras.hub`
registers these classes, so it comes before `from_preset`. Only this package imports
keras-hub; `lambda_keras` imports it where it is installed, and works without it.

* [`LambdaResNetBackbone`][lambda_keras.hub.backbones.LambdaResNetBackbone],
  [`TimmLambdaResNetBackbone`][lambda_keras.hub.backbones.TimmLambdaResNetBackbone] and
  [`ResNetRSBackbone`][lambda_keras.hub.backbones.ResNetRSBackbone]
  ([`backbones`][lambda_keras.hub.backbones]): the zoo's pyramid backbones (P2-P5) as keras-hub
  feature-pyramid backbones.
* An ``ImageClassifier`` on each, with its preprocessor and image converter
  ([`image_classifier`][lambda_keras.hub.image_classifier]):
  [`TimmLambdaResNetImageClassifier`][lambda_keras.hub.image_classifier.TimmLambdaResNetImageClassifier]
  and so on.
* The project's presets ([`presets`][lambda_keras.hub.presets]): every registered ImageNet
  weights file as a keras-hub preset (``list_presets()``, ``preset_directory(name)``), checked
  as the weights registry checks its files.

keras-hub 0.32 requires Keras 3.15 or newer (the rest of the package: 3.10).
"""

try:
    import keras_hub  # noqa: F401
except ImportError as error:  # pragma: no cover - the message is tested in a child process
    raise ImportError(
        "lambda_keras.hub needs keras-hub, which is not installed: "
        'pip install "lambda_keras[hub]" (or pip install keras-hub).'
    ) from error

from lambda_keras.hub import backbones, image_classifier, presets
from lambda_keras.hub.backbones import (
    LambdaResNetBackbone,
    ResNetRSBackbone,
    TimmLambdaResNetBackbone,
)
from lambda_keras.hub.image_classifier import (
    LambdaResNetImageClassifier,
    LambdaResNetImageClassifierPreprocessor,
    LambdaResNetImageConverter,
    ResNetRSImageClassifier,
    ResNetRSImageClassifierPreprocessor,
    ResNetRSImageConverter,
    TimmLambdaResNetImageClassifier,
    TimmLambdaResNetImageClassifierPreprocessor,
    TimmLambdaResNetImageConverter,
)
from lambda_keras.hub.presets import list_presets, preset_directory

__all__ = [
    "LambdaResNetBackbone",
    "LambdaResNetImageClassifier",
    "LambdaResNetImageClassifierPreprocessor",
    "LambdaResNetImageConverter",
    "ResNetRSBackbone",
    "ResNetRSImageClassifier",
    "ResNetRSImageClassifierPreprocessor",
    "ResNetRSImageConverter",
    "TimmLambdaResNetBackbone",
    "TimmLambdaResNetImageClassifier",
    "TimmLambdaResNetImageClassifierPreprocessor",
    "TimmLambdaResNetImageConverter",
    "backbones",
    "image_classifier",
    "list_presets",
    "preset_directory",
    "presets",
]
