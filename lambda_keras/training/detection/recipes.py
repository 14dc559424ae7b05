"""Mask R-CNN training recipes (how a recipe trains: size, steps, batch, schedule, heads).

Recipes:

* ``"paper"`` (App. F.3): from scratch, synchronised batch norm, 1024 x 1024, large-scale
  jitter [0.1, 2.0], SGD momentum 0.9, linear warm-up over 1,000 steps from 0 to 0.32 at batch
  256 (scaled linearly with the batch), divided by 10 at 90%, 95% and 97.5% of 130k steps,
  weight decay 4e-5.
* ``"finetune"``: from the backbone's classification weights with frozen batch norm, the same
  schedule shape at 0.02 per 16 images, weight decay 1e-4 (the usual Mask R-CNN fine-tuning).
  With ``weights`` (``"coco"`` or a converted ``.weights.h5``) it starts from torchvision's
  COCO Mask R-CNN: on ``--backbone=torchvision_resnet`` the whole model but its class layers
  ([`maskrcnn_resnet50_fpn`][lambda_keras.detection.maskrcnn_resnet50_fpn]), on another backbone
  whose stages are 256/512/1024/2048 wide (``lambda_resnet`` or ``resnet_rs`` at depth 50, width 1)
  the FPN, RPN and heads but the class layers. The heads keep the standard widths then.
* ``"shapes"``: the embedded shapes data on a CPU: 128 x 128, AdamW 1e-3 with warm-up, jitter
  [0.8, 1.25], heads narrowed to 64 FPN channels, a 256-unit box head, a 64-channel mask head
  and 128 RoIs per image.
"""

from __future__ import annotations

import dataclasses

import keras

from lambda_keras.detection.schedules import WarmupStepDecay

__all__ = ["RECIPES", "DetectionRecipe"]


@dataclasses.dataclass(frozen=True)
class DetectionRecipe:
    """How a recipe trains. ``learning_rate`` is per ``reference_batch`` images."""

    name: str
    image_size: int
    steps: int
    batch_size: int
    learning_rate: float
    reference_batch: int
    warmup_steps: int
    weight_decay: float
    scale_range: tuple[float, float]
    batch_norm: str
    optimizer: str = "sgd"
    heads: tuple[tuple[str, object], ...] = ()

    @property
    def head_options(self) -> dict:
        """MaskRCNN arguments that differ from the standard Mask R-CNN's."""
        return dict(self.heads)

    def make_optimizer(self, batch_size: int, total_steps: int) -> keras.optimizers.Optimizer:
        peak = self.learning_rate * batch_size / self.reference_batch
        schedule = WarmupStepDecay(peak, min(self.warmup_steps, total_steps // 4), total_steps)
        if self.optimizer == "adam":
            return keras.optimizers.AdamW(schedule, weight_decay=self.weight_decay)
        return keras.optimizers.SGD(
            schedule, momentum=0.9, weight_decay=self.weight_decay, global_clipnorm=10.0
        )


RECIPES = {
    r.name: r
    for r in (
        DetectionRecipe(
            "paper", 1024, 130_000, 256, 0.32, 256, 1000, 4e-5, (0.1, 2.0), "synchronized"
        ),
        DetectionRecipe("finetune", 1024, 90_000, 16, 0.02, 16, 1000, 1e-4, (0.1, 2.0), "frozen"),
        # Narrow heads: at the standard widths the mask head alone costs ~60 GFLOPs per image.
        DetectionRecipe(
            name="shapes",
            image_size=128,
            steps=1000,
            batch_size=8,
            learning_rate=1e-3,
            reference_batch=8,
            warmup_steps=100,
            weight_decay=1e-4,
            scale_range=(0.8, 1.25),
            batch_norm="standard",
            optimizer="adam",
            heads=(
                ("fpn_channels", 64),
                ("box_head_units", 256),
                ("mask_head_channels", 64),
                ("rois_per_image", 128),
                ("rpn_top_k", (1000, 500, 500, 300)),
            ),
        ),
    )
}
"""The detection recipes by name: `paper` (App. F.3, from scratch), `finetune` (from
classification or COCO weights) and the small `shapes` default."""
