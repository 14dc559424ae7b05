"""One Mask R-CNN training run's settings (the flags of ``scripts/train_maskrcnn.py``)."""

from __future__ import annotations

import dataclasses

__all__ = ["DetectionConfig"]


@dataclasses.dataclass(frozen=True)
class DetectionConfig:
    """One training run (the flags of ``scripts/train_maskrcnn.py``)."""

    train_annotations: str | None = None
    train_images: str | None = None
    val_annotations: str | None = None
    val_images: str | None = None
    shapes_dir: str = "runs/shapes_data"
    recipe: str = "shapes"
    backbone: str = "lambda_resnet"
    depth: int = 50
    width_multiplier: float = 0.25
    backbone_weights: str | None = None
    weights: str | None = None
    image_size: int | None = None
    batch_size: int | None = None
    steps: int | None = None
    steps_per_epoch: int = 100
    max_instances: int = 100
    strategy: str = "auto"
    tpu: str | None = None
    coordinator_address: str | None = None
    num_processes: int | None = None
    process_id: int | None = None
    jit_compile: bool = False
    model_dir: str = "runs/maskrcnn"
    export: bool = True
    seed: int = 0
    verbose: int = 2
