"""Train Mask R-CNN on COCO-format data: ``python training/train_maskrcnn.py``.

With no flags: a Mask R-CNN on a LambdaResNet-50 backbone at width 0.25, trained on the embedded
shapes data (generated under --shapes_dir as COCO JSON + PNG files), evaluated with pycocotools'
COCOeval (box and mask AP), then saved as ``model.keras`` and a serving SavedModel under
--model_dir. Your data: --train_annotations --train_images --val_annotations --val_images.
``--recipe=paper`` is App. F.3's from-scratch set-up (1024 x 1024, batch 256, synchronised batch
norm), ``--recipe=finetune`` starts from --backbone_weights with frozen batch norm. A killed run
resumes from its last epoch when started again with the same --model_dir.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags, logging

from lambda_keras.detection.trainer import (
    BACKBONES,
    RECIPES,
    DetectionConfig,
    prepare_data,
    train,
)
from lambda_keras.training.distribute import STRATEGIES
from lambda_keras.zoo.resnet_family import DEPTHS

DEFAULTS = DetectionConfig()
flags.DEFINE_string("train_annotations", None, "COCO annotations JSON of the training set.")
flags.DEFINE_string("train_images", None, "Image folder of the training set.")
flags.DEFINE_string("val_annotations", None, "COCO annotations JSON of the validation set.")
flags.DEFINE_string("val_images", None, "Image folder of the validation set.")
flags.DEFINE_string("shapes_dir", DEFAULTS.shapes_dir, "Where the shapes data is generated.")
flags.DEFINE_enum("recipe", DEFAULTS.recipe, list(RECIPES), "Training recipe.")
flags.DEFINE_enum("backbone", DEFAULTS.backbone, list(BACKBONES), "Backbone family.")
flags.DEFINE_integer("depth", DEFAULTS.depth, "Backbone depth (50, 101, ... 420).")
flags.DEFINE_float("width_multiplier", DEFAULTS.width_multiplier, "Backbone width (1.0: paper).")
flags.DEFINE_string("backbone_weights", None, "Registered weights name or .weights.h5 file.")
flags.DEFINE_integer("image_size", None, "Image side (a multiple of 64); default the recipe's.")
flags.DEFINE_integer("batch_size", None, "Global batch size; default the recipe's.")
flags.DEFINE_integer("steps", None, "Training steps; default the recipe's.")
flags.DEFINE_integer("steps_per_epoch", DEFAULTS.steps_per_epoch, "Steps between checkpoints.")
flags.DEFINE_integer("max_instances", DEFAULTS.max_instances, "Ground-truth objects per image.")
flags.DEFINE_enum("strategy", DEFAULTS.strategy, list(STRATEGIES), "Distribution strategy.")
flags.DEFINE_string("tpu", None, "TPU name for --strategy=tpu.")
flags.DEFINE_boolean("jit_compile", DEFAULTS.jit_compile, "Compile the training step with XLA.")
flags.DEFINE_string("model_dir", DEFAULTS.model_dir, "Checkpoints, logs and exports.")
flags.DEFINE_boolean("export", DEFAULTS.export, "Save model.keras and a serving SavedModel.")
flags.DEFINE_integer("seed", DEFAULTS.seed, "Random seed.")
FLAGS = flags.FLAGS

flags.register_validator(
    "depth", lambda d: d in DEPTHS, f"--depth must be one of {', '.join(map(str, DEPTHS))}."
)
flags.register_validator(
    "image_size",
    lambda s: s is None or (s >= 64 and s % 64 == 0),
    "--image_size must be a multiple of 64.",
)
for _name in ("batch_size", "steps"):
    flags.register_validator(_name, lambda x: x is None or x >= 1, f"--{_name} must be positive.")
for _name in ("steps_per_epoch", "max_instances"):
    flags.register_validator(_name, lambda x: x >= 1, f"--{_name} must be positive.")
flags.register_validator(
    "width_multiplier", lambda x: x > 0, "--width_multiplier must be a positive number."
)


def main(argv):
    del argv
    logging.set_verbosity(logging.WARNING)
    fields = DetectionConfig.__dataclass_fields__
    config = DetectionConfig(
        **{name: getattr(FLAGS, name) for name in fields if name in FLAGS},
        verbose=1 if sys.stdout.isatty() else 2,
    )
    try:
        prepared = prepare_data(config)
    except (ValueError, FileNotFoundError) as err:  # a user's mistake in the data: one line
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    train(config, prepared)  # an error from here on is a bug: its traceback stays


if __name__ == "__main__":
    app.run(main)
