"""Export a ``.keras`` model for serving: ``python training/export.py --model_path=...``.

Writes a SavedModel whose signatures take uint8 images of any size (``serve_images``, also the
default) or encoded JPEG/PNG bytes (``serve_bytes``) and do the resize, centre crop and
normalisation in the graph.
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags, logging

flags.DEFINE_string("model_path", "runs/digits/model.keras", "The .keras file to export.")
flags.DEFINE_string("export_dir", "runs/digits/saved_model", "Where the SavedModel goes.")
flags.DEFINE_integer("image_size", 32, "Image side the model takes.")
flags.DEFINE_float("crop_fraction", 0.875, "Centre-crop fraction of the serving graph.")
FLAGS = flags.FLAGS


def main(argv):
    del argv
    logging.set_verbosity(logging.WARNING)
    import keras

    from lambda_keras.training.serving import export_for_serving

    if not os.path.exists(FLAGS.model_path):
        raise SystemExit(f"--model_path {FLAGS.model_path!r} does not exist.")
    model = keras.saving.load_model(FLAGS.model_path)
    path = export_for_serving(model, FLAGS.export_dir, FLAGS.image_size, FLAGS.crop_fraction)
    print(f"exported {FLAGS.model_path} to {path} (signatures serve_images, serve_bytes)")


if __name__ == "__main__":
    app.run(main)
