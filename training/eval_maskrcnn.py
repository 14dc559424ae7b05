"""Box and mask AP of a saved Mask R-CNN on COCO-format data (pycocotools' COCOeval).

    python training/eval_maskrcnn.py --model_path=runs/maskrcnn/model.keras \
        --annotations=runs/shapes_data/val.json --images=runs/shapes_data/val
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags, logging

flags.DEFINE_string("model_path", "runs/maskrcnn/model.keras", "The .keras file of a MaskRCNN.")
flags.DEFINE_string("annotations", "runs/shapes_data/val.json", "COCO annotations JSON.")
flags.DEFINE_string("images", "runs/shapes_data/val", "Image folder.")
flags.DEFINE_integer("image_size", 128, "Image side the model was trained at (multiple of 64).")
flags.DEFINE_integer("batch_size", 8, "Batch size.")
flags.DEFINE_string("results_file", None, "Also write the detections (COCO result JSON) here.")
FLAGS = flags.FLAGS
flags.register_validator(
    "image_size", lambda s: s >= 64 and s % 64 == 0, "--image_size must be a multiple of 64."
)
flags.register_validator("batch_size", lambda x: x >= 1, "--batch_size must be positive.")


def main(argv):
    del argv
    logging.set_verbosity(logging.WARNING)
    import keras

    from lambda_keras.detection import coco, coco_eval

    try:
        if not os.path.isfile(FLAGS.model_path):
            raise FileNotFoundError(f"--model_path: no such file {FLAGS.model_path}")
        source = coco.load_coco(FLAGS.annotations, FLAGS.images)
        model = keras.saving.load_model(FLAGS.model_path)
        num_classes = getattr(model, "num_classes", None)
        if num_classes != source.num_classes:
            raise ValueError(
                f"The model detects {num_classes} classes; {FLAGS.annotations} has "
                f"{source.num_classes} categories."
            )
    except (ValueError, FileNotFoundError) as err:  # a user's mistake: one line
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    scores = coco_eval.evaluate(  # an error from here on is a bug: its traceback stays
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
    app.run(main)
