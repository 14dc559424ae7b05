"""Image-classification training of the zoo's models, in the same modules as
[`lambda_keras.training.detection`][lambda_keras.training.detection]: a run's settings
([`config`][lambda_keras.training.classification.config]), the paper's recipes
([`recipes`][lambda_keras.training.classification.recipes]), its data
([`data`][lambda_keras.training.classification.data]), its model
([`model`][lambda_keras.training.classification.model]), the run itself
([`trainer`][lambda_keras.training.classification.trainer]) and top-1 / top-5 scoring
([`evaluation`][lambda_keras.training.classification.evaluation]). The scripts are
``scripts/train.py`` and ``scripts/eval.py``."""

from lambda_keras.training.classification.config import ClassificationConfig
from lambda_keras.training.classification.data import Inputs, Source, load_source, make_inputs
from lambda_keras.training.classification.evaluation import evaluate, top_k_accuracy
from lambda_keras.training.classification.model import build_model, compiled_model
from lambda_keras.training.classification.recipes import RECIPES, Recipe
from lambda_keras.training.classification.trainer import train

__all__ = [
    "RECIPES",
    "ClassificationConfig",
    "Inputs",
    "Recipe",
    "Source",
    "build_model",
    "compiled_model",
    "evaluate",
    "load_source",
    "make_inputs",
    "top_k_accuracy",
    "train",
]
