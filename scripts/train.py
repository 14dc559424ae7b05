"""Train a zoo model: ``python scripts/train.py --model=lambda_resnet50 --dataset=digits``.

With no flags: the README's demo, a LambdaResNet-50 at width 0.25 on scikit-learn's real
handwritten digits (32x32), 30 epochs of the paper's 90-epoch recipe, on the CPU in a few
minutes; then evaluation and export (``.keras`` and a serving SavedModel) under --model_dir.
``--model=resnet_rs50`` trains the convolutional baseline the same way. A killed run resumes
from its last epoch when started again with the same --model_dir.

``--backend=jax`` trains with Keras on JAX (the TPU path: ``keras.distribution.DataParallel``
over every local device), ``--backend=tensorflow`` (the default) with ``tf.distribute``,
``--backend=torch`` on one device; the input pipeline is ``tf.data`` on all three. The flag sets
``KERAS_BACKEND`` before Keras is imported.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import placement_flags  # beside this script (its folder is on sys.path)

if __name__ == "__main__":  # before anything below imports Keras
    placement_flags.set_backend_from_argv()

from absl import app, flags, logging  # noqa: E402

from lambda_keras.training.classification import RECIPES, ClassificationConfig, train  # noqa: E402
from lambda_keras.training.classification.config import LOOPS, MIXED_PRECISION  # noqa: E402
from lambda_keras.training.flag_checks import register_checks  # noqa: E402

DEFAULTS = ClassificationConfig()


def define_flags(flag_values: flags.FlagValues = flags.FLAGS) -> flags.FlagValues:
    """Define the script's flags and their checks on ``flag_values`` (the global ``FLAGS`` when
    run; the tests parse a fresh ``FlagValues`` in process)."""
    flags.DEFINE_string(
        "model", DEFAULTS.model, "Zoo registry name (zoo.list_models()).", flag_values=flag_values
    )
    flags.DEFINE_string(
        "dataset",
        DEFAULTS.dataset,
        "'digits', 'folder:<root>' (<root>/<split>/<class>/) or TFDS.",
        flag_values=flag_values,
    )
    flags.DEFINE_string("data_dir", None, "TFDS data_dir.", flag_values=flag_values)
    flags.DEFINE_string(
        "manual_dir", None, "TFDS manual_dir (ImageNet's archives).", flag_values=flag_values
    )
    flags.DEFINE_string(
        "train_split", DEFAULTS.train_split, "Training split.", flag_values=flag_values
    )
    flags.DEFINE_string(
        "eval_split", DEFAULTS.eval_split, "Evaluation split.", flag_values=flag_values
    )
    flags.DEFINE_enum(
        "recipe",
        DEFAULTS.recipe,
        list(RECIPES),
        "Training recipe (App. F.3).",
        flag_values=flag_values,
    )
    flags.DEFINE_integer("image_size", DEFAULTS.image_size, "Image side.", flag_values=flag_values)
    flags.DEFINE_float(
        "crop_min_area",
        DEFAULTS.crop_min_area,
        "Smallest random-resized crop area (ImageNet: 0.08).",
        flag_values=flag_values,
    )
    flags.DEFINE_boolean(
        "horizontal_flip",
        None,
        "Random horizontal flips; default on for all but the digits.",
        flag_values=flag_values,
    )
    flags.DEFINE_float(
        "mixup_alpha", DEFAULTS.mixup_alpha, "MixUp alpha (0: off).", flag_values=flag_values
    )
    flags.DEFINE_float(
        "cutmix_alpha", DEFAULTS.cutmix_alpha, "CutMix alpha (0: off).", flag_values=flag_values
    )
    flags.DEFINE_integer(
        "batch_size",
        DEFAULTS.batch_size,
        "Global batch size (all replicas).",
        flag_values=flag_values,
    )
    flags.DEFINE_integer(
        "epochs",
        DEFAULTS.epochs,
        "Epochs (from Python, ClassificationConfig(epochs=None) takes the recipe's).",
        flag_values=flag_values,
    )
    flags.DEFINE_integer(
        "steps_per_epoch",
        DEFAULTS.steps_per_epoch,
        "Steps per epoch (the schedule follows); default one pass over the training split.",
        flag_values=flag_values,
    )
    flags.DEFINE_integer(
        "warmup_epochs", None, "Override the recipe's warm-up epochs.", flag_values=flag_values
    )
    flags.DEFINE_float(
        "learning_rate", None, "Override the recipe's lr per 256 images.", flag_values=flag_values
    )
    flags.DEFINE_float(
        "width_multiplier",
        DEFAULTS.width_multiplier,
        "Scales the model's channels (1.0 = the paper's), for builders that take it.",
        flag_values=flag_values,
    )
    placement_flags.define_placement_flags(flag_values)
    flags.DEFINE_enum(
        "loop",
        DEFAULTS.loop,
        list(LOOPS),
        "model.fit, or a strategy.run loop (custom); auto: custom for multi_worker.",
        flag_values=flag_values,
    )
    flags.DEFINE_boolean(
        "sync_batch_norm",
        DEFAULTS.sync_batch_norm,
        "Batch-norm statistics over the global batch (all replicas).",
        flag_values=flag_values,
    )
    flags.DEFINE_boolean(
        "deterministic",
        DEFAULTS.deterministic,
        "A fixed input pipeline order for the seed (slower).",
        flag_values=flag_values,
    )
    flags.DEFINE_string(
        "model_dir", DEFAULTS.model_dir, "Checkpoints, logs and exports.", flag_values=flag_values
    )
    flags.DEFINE_enum(
        "mixed_precision",
        DEFAULTS.mixed_precision,
        list(MIXED_PRECISION),
        "Mixed precision: bfloat16 (TPU, CPU with AMX) or float16 (GPU).",
        flag_values=flag_values,
    )
    flags.DEFINE_integer("seed", DEFAULTS.seed, "Random seed.", flag_values=flag_values)
    flags.DEFINE_boolean(
        "export",
        DEFAULTS.export,
        "Export .keras and a serving SavedModel.",
        flag_values=flag_values,
    )
    # A user's mistake is one line, "FATAL Flags parsing error: ...", before anything is built:
    # the config's own checks, with --name for `name`.
    register_checks(ClassificationConfig.CHECKS, flag_values)
    return flag_values


def main(argv):
    del argv
    FLAGS = flags.FLAGS
    logging.set_verbosity(logging.WARNING)

    placement_flags.check_imported_backend(FLAGS.backend)
    verbose = 1 if sys.stdout.isatty() else 2
    config = placement_flags.config_from_flags(ClassificationConfig, FLAGS, verbose=verbose)
    try:
        train(config)
    except ValueError as err:  # a user's mistake found while reading the data: one line
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    define_flags()
    app.run(main)
