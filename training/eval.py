"""Top-1 / top-5 of a trained model: ``python training/eval.py --model_path=<.keras or dir>``.

``--model_path`` is a ``.keras`` file (``model.keras`` at the end of a run, ``checkpoint.keras``
after every epoch, during the run too) or a serving SavedModel directory (``export.py``).
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags, logging

from lambda_keras.training.data import load_source
from lambda_keras.training.evaluation import evaluate

flags.DEFINE_string("model_path", "runs/digits/model.keras", ".keras file or SavedModel dir.")
flags.DEFINE_string("dataset", "digits", "'digits', 'folder:<root>' or a TFDS name.")
flags.DEFINE_string("split", "test", "Split to evaluate.")
flags.DEFINE_string("data_dir", None, "TFDS data_dir.")
flags.DEFINE_string("manual_dir", None, "TFDS manual_dir.")
flags.DEFINE_integer("image_size", 32, "Image side the model takes.")
flags.DEFINE_integer("batch_size", 64, "Batch size.")
flags.DEFINE_float("crop_fraction", 0.875, "Centre-crop fraction.")
FLAGS = flags.FLAGS


def main(argv):
    del argv
    logging.set_verbosity(logging.WARNING)
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
    print(
        f"{FLAGS.model_path} on {FLAGS.dataset}/{FLAGS.split} ({result['examples']} images): "
        f"top-1 {result['top1']:.4f}, top-5 {result['top5']:.4f}"
    )


if __name__ == "__main__":
    app.run(main)
