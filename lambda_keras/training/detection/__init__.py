"""Mask R-CNN training, apart from the model package (as classification's lives in
:mod:`lambda_keras.training`): recipes (:mod:`.recipes`), a run's settings (:mod:`.config`)
and their resolution (:mod:`.run`), its data (:mod:`.data`), its model (:mod:`.model`) and the
run itself (:mod:`.trainer`). The script is ``training/train_maskrcnn.py``."""

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
