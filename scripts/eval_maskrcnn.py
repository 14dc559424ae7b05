"""Box and mask AP of a saved Mask R-CNN on COCO-format data (pycocotools' COCOeval).

    python scripts/eval_maskrcnn.py --model_path=runs/maskrcnn/model.keras \
        --annotations=runs/shapes_data/val.json --images=runs/shapes_data/val
"""

import functools
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags, logging

from lambda_keras import _validation as v
from lambda_keras.detection.image_size import check_image_size
from lambda_keras.training.flag_checks import register_check


def define_flags(flag_values: flags.FlagValues = flags.FLAGS) -> flags.FlagValues:
    """Define the script's flags and their checks on ``flag_values``."""
    fv = flag_values
    flags.DEFINE_string(
        "model_path", "runs/maskrcnn/model.keras", "The .keras file of a MaskRCNN.", flag_values=fv
    )
    flags.DEFINE_string(
        "annotations", "runs/shapes_data/val.json", "COCO annotations JSON.", flag_values=fv
    )
    flags.DEFINE_string("images", "runs/shapes_data/val", "Image folder.", flag_values=fv)
    flags.DEFINE_integer(
        "image_size", 128, "Image side the model was trained at (multiple of 64).", flag_values=fv
    )
    flags.DEFINE_integer("batch_size", 8, "Batch size.", flag_values=fv)
    flags.DEFINE_string(
        "results_file", None, "Also write the detections (COCO result JSON) here.", flag_values=fv
    )
    register_check("image_size", check_image_size, fv)
    register_check("batch_size", functools.partial(v.positive_int, "batch_size"), fv)
    return fv


def main(argv):
    del argv
    FLAGS = flags.FLAGS
    logging.set_verbosity(logging.WARNING)
    import keras

    from lambda_keras.training.detection import evaluation
    from lambda_keras.training.detection.datasets import coco

    try:
        if not os.path.isfile(FLAGS.model_path):
            raise FileNotFoundError(f"--model_path: no such file {FLAGS.model_path}")
        source = coco.load_coco(FLAGS.annotations, FLAGS.images)
        model = keras.saving.load_model(FLAGS.model_path, compile=False)  # scoring only
        num_classes = getattr(model, "num_classes", None)
        if num_classes != source.num_classes:
            raise ValueError(
                f"The model detects {num_classes} classes; {FLAGS.annotations} has "
                f"{source.num_classes} categories."
            )
    except (ValueError, FileNotFoundError) as err:  # a user's mistake: one line
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    scores = evaluation.evaluate(  # an error from here on is a bug: its traceback stays
        model,
        source,
        image_size=FLAGS.image_size,
        batch_size=FLAGS.batch_size,
        results_file=FLAGS.results_file,
    )
    print(
        f"{FLAGS.model_path} on {FLAGS.annotations}: box AP {scores['bbox']['AP']:.3f}, "
        f"mask AP {scores['segm']['AP']:.3f}"
    )


if __name__ == "__main__":
    define_flags()
    app.run(main)
