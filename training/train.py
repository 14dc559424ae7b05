"""Train a zoo model: ``python training/train.py --model=lambda_resnet50 --dataset=digits``.

With no flags: the README's demo, a LambdaResNet-50 at width 0.25 on scikit-learn's real
handwritten digits (32x32), 30 epochs of the paper's 90-epoch recipe, on the CPU in a few
minutes; then evaluation and export (``.keras`` and a serving SavedModel) under --model_dir.
``--model=resnet_rs50`` trains the convolutional baseline the same way. A killed run resumes
from its last epoch when started again with the same --model_dir.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags, logging

from lambda_keras.training.distribute import STRATEGIES
from lambda_keras.training.trainer import (
    LOOPS,
    MIXED_PRECISION,
    OPTION_CHECKS,
    TrainConfig,
    train,
)

DEFAULTS = TrainConfig()
flags.DEFINE_string("model", DEFAULTS.model, "Zoo registry name (zoo.list_models()).")
flags.DEFINE_string(
    "dataset", DEFAULTS.dataset, "'digits', 'folder:<root>' (<root>/<split>/<class>/) or TFDS."
)
flags.DEFINE_string("data_dir", None, "TFDS data_dir.")
flags.DEFINE_string("manual_dir", None, "TFDS manual_dir (ImageNet's archives).")
flags.DEFINE_string("train_split", DEFAULTS.train_split, "Training split.")
flags.DEFINE_string("eval_split", DEFAULTS.eval_split, "Evaluation split.")
flags.DEFINE_enum("recipe", DEFAULTS.recipe, ["90ep", "350ep"], "Training recipe (App. F.3).")
flags.DEFINE_integer("image_size", DEFAULTS.image_size, "Image side.")
flags.DEFINE_float(
    "crop_min_area", DEFAULTS.crop_min_area, "Smallest random-resized crop area (ImageNet: 0.08)."
)
flags.DEFINE_boolean(
    "horizontal_flip", None, "Random horizontal flips; default on for all but the digits."
)
flags.DEFINE_float("mixup_alpha", DEFAULTS.mixup_alpha, "MixUp alpha (0: off).")
flags.DEFINE_float("cutmix_alpha", DEFAULTS.cutmix_alpha, "CutMix alpha (0: off).")
flags.DEFINE_integer("batch_size", DEFAULTS.batch_size, "Global batch size (all replicas).")
flags.DEFINE_integer("epochs", DEFAULTS.epochs, "Epochs; default the recipe's for ImageNet.")
flags.DEFINE_integer("warmup_epochs", None, "Override the recipe's warm-up epochs.")
flags.DEFINE_float("learning_rate", None, "Override the recipe's lr per 256 images.")
flags.DEFINE_float(
    "width_multiplier", DEFAULTS.width_multiplier, "ResNet-RS family width (1.0 = the paper's)."
)
flags.DEFINE_enum("strategy", DEFAULTS.strategy, list(STRATEGIES), "Distribution strategy.")
flags.DEFINE_string("tpu", None, "TPU name for --strategy=tpu ('local' on a TPU VM).")
flags.DEFINE_enum(
    "loop",
    DEFAULTS.loop,
    list(LOOPS),
    "model.fit, or a strategy.run loop (custom); auto: custom for multi_worker.",
)
flags.DEFINE_boolean(
    "sync_batch_norm",
    DEFAULTS.sync_batch_norm,
    "Batch-norm statistics over the global batch (all replicas).",
)
flags.DEFINE_boolean(
    "deterministic", DEFAULTS.deterministic, "A fixed input pipeline order for the seed (slower)."
)
flags.DEFINE_string("model_dir", DEFAULTS.model_dir, "Checkpoints, logs and exports.")
flags.DEFINE_enum(
    "mixed_precision",
    DEFAULTS.mixed_precision,
    list(MIXED_PRECISION),
    "Mixed precision: bfloat16 (TPU, CPU with AMX) or float16 (GPU).",
)
flags.DEFINE_integer("seed", DEFAULTS.seed, "Random seed.")
flags.DEFINE_boolean("export", DEFAULTS.export, "Export .keras and a serving SavedModel.")
FLAGS = flags.FLAGS

# A user's mistake is one line, "FATAL Flags parsing error: ...", before anything is built.
for _option, (_accepts, _allowed) in OPTION_CHECKS.items():
    flags.register_validator(_option, _accepts, message=f"--{_option} must be {_allowed}.")


@flags.validator("model")
def _known_model(name):
    from lambda_keras import zoo

    try:
        zoo.model_info(name)
    except (TypeError, ValueError) as err:
        raise flags.ValidationError(f"--model: {err}") from None
    return True


@flags.validator("dataset", message="--dataset=folder:<root> needs an existing directory <root>.")
def _existing_folder(dataset):
    return not dataset.startswith("folder:") or os.path.isdir(dataset.removeprefix("folder:"))


def main(argv):
    del argv
    logging.set_verbosity(logging.WARNING)
    config = TrainConfig(
        **{
            field: getattr(FLAGS, field)
            for field in TrainConfig.__dataclass_fields__
            if field in FLAGS and field != "verbose"
        }
    )
    config.verbose = 1 if sys.stdout.isatty() else 2
    try:
        train(config)
    except ValueError as err:  # a user's mistake found while reading the data: one line
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    app.run(main)
