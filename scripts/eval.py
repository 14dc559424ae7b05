"""Top-1 / top-5 of a trained model: ``python scripts/eval.py --model_path=<.keras or dir>``.

``--model_path`` is a ``.keras`` file (``model.keras`` at the end of a run, ``checkpoint.keras``
after every epoch, during the run too) or a serving SavedModel directory (``export.py``).
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags, logging

from lambda_keras import _validation as v
from lambda_keras.preprocessing import check_crop_fraction
from lambda_keras.training.classification.data import load_source
from lambda_keras.training.classification.evaluation import evaluate
from lambda_keras.training.flag_checks import register_check


def define_flags(flag_values: flags.FlagValues = flags.FLAGS) -> flags.FlagValues:
    """Define the script's flags and their checks on ``flag_values``."""
    fv = flag_values
    flags.DEFINE_string(
        "model_path", "runs/digits/model.keras", ".keras file or SavedModel dir.", flag_values=fv
    )
    flags.DEFINE_string(
        "dataset", "digits", "'digits', 'folder:<root>' or a TFDS name.", flag_values=fv
    )
    flags.DEFINE_string("split", "test", "Split to evaluate.", flag_values=fv)
    flags.DEFINE_string("data_dir", None, "TFDS data_dir.", flag_values=fv)
    flags.DEFINE_string("manual_dir", None, "TFDS manual_dir.", flag_values=fv)
    flags.DEFINE_integer("image_size", 32, "Image side the model takes.", flag_values=fv)
    flags.DEFINE_integer("batch_size", 64, "Batch size.", flag_values=fv)
    flags.DEFINE_float("crop_fraction", 0.875, "Centre-crop fraction.", flag_values=fv)
    flags.register_validator(
        "image_size", lambda x: x >= 32, "--image_size must be >= 32.", flag_values=fv
    )
    register_check("batch_size", lambda x: v.positive_int("batch_size", x), fv)
    register_check("crop_fraction", check_crop_fraction, fv)
    return fv


def result_line(model_path: str, split: str, result: dict) -> str:
    """The line the script prints: the scores, on how many images, and how many damaged files
    of the split were left out (their paths are printed above it when the data is read)."""
    counted = f"{result['examples']} images"
    if result["skipped"]:
        counted += f"; {result['skipped']} damaged file(s) skipped, listed above"
    return (
        f"{model_path} on {split} ({counted}): "
        f"top-1 {result['top1']:.4f}, top-5 {result['top5']:.4f}"
    )


def main(argv):
    del argv
    FLAGS = flags.FLAGS
    logging.set_verbosity(logging.WARNING)
    try:
        source = load_source(
            FLAGS.dataset,
            FLAGS.split,
            image_size=FLAGS.image_size,
            data_dir=FLAGS.data_dir,
            manual_dir=FLAGS.manual_dir,
        )
        result = evaluate(
            FLAGS.model_path, source, FLAGS.image_size, FLAGS.batch_size, FLAGS.crop_fraction
        )
    except ValueError as err:  # a user's mistake: one line, exit status 2
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    print(result_line(FLAGS.model_path, f"{FLAGS.dataset}/{FLAGS.split}", result))


if __name__ == "__main__":
    define_flags()
    app.run(main)
