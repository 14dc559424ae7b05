"""Mask R-CNN training, apart from the model package (as classification's lives in
[`lambda_keras.training`][lambda_keras.training]): recipes
([`recipes`][lambda_keras.training.detection.recipes]), a run's settings
([`config`][lambda_keras.training.detection.config]) and their resolution
([`run`][lambda_keras.training.detection.run]), its data
([`data`][lambda_keras.training.detection.data]), its model
([`model`][lambda_keras.training.detection.model]) and the run itself
([`trainer`][lambda_keras.training.detection.trainer]). The script is
``scripts/train_maskrcnn.py``."""

from lambda_keras.training.detection.config import DetectionConfig
from lambda_keras.training.detection.data import PreparedData, prepare_data
from lambda_keras.training.detection.model import build_model, copy_heads
from lambda_keras.training.detection.recipes import RECIPES, DetectionRecipe
from lambda_keras.training.detection.run import BACKBONES, DetectionRun, resolve_run
from lambda_keras.training.detection.trainer import train

__all__ = [
    "BACKBONES",
    "RECIPES",
    "DetectionConfig",
    "DetectionRecipe",
    "DetectionRun",
    "PreparedData",
    "build_model",
    "copy_heads",
    "prepare_data",
    "resolve_run",
    "train",
]
