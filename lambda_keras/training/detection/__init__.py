"""Mask R-CNN training, in the same modules as
[`lambda_keras.training.classification`][lambda_keras.training.classification]: a run's settings
and their resolution ([`config`][lambda_keras.training.detection.config]), the recipes
([`recipes`][lambda_keras.training.detection.recipes]), its data
([`data`][lambda_keras.training.detection.data], read by
[`datasets`][lambda_keras.training.detection.datasets]: COCO, labelme, the shapes set), its model
([`model`][lambda_keras.training.detection.model]), the run itself
([`trainer`][lambda_keras.training.detection.trainer]) and COCOeval
([`evaluation`][lambda_keras.training.detection.evaluation]). The scripts are
``scripts/train_maskrcnn.py`` and ``scripts/eval_maskrcnn.py``."""

from lambda_keras.training.detection.config import (
    BACKBONES,
    DetectionConfig,
    DetectionRun,
    resolve_run,
)
from lambda_keras.training.detection.data import PreparedData, prepare_data
from lambda_keras.training.detection.evaluation import evaluate
from lambda_keras.training.detection.model import build_model, copy_heads
from lambda_keras.training.detection.recipes import RECIPES, DetectionRecipe
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
    "evaluate",
    "prepare_data",
    "resolve_run",
    "train",
]
