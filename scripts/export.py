"""Export a model for serving.

``python scripts/export.py --model_path=run/model.keras`` exports a trained ``.keras`` file;
``python scripts/export.py --zoo_model=lambda_resnet50ts --weights=imagenet`` a zoo model with
registered weights, at the input size and crop fraction those weights were evaluated with.

Writes a SavedModel whose signatures take uint8 images of any size (``serve_images``, also the
default) or encoded JPEG/PNG bytes (``serve_bytes``) and do the resize, centre crop and
normalisation in the graph.
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags, logging

from lambda_keras.preprocessing import check_crop_fraction
from lambda_keras.training.flag_checks import register_check


def define_flags(flag_values: flags.FlagValues = flags.FLAGS) -> flags.FlagValues:
    """Define the script's flags and their checks on ``flag_values``."""
    fv = flag_values
    flags.DEFINE_string(
        "model_path", "runs/digits/model.keras", "The .keras file to export.", flag_values=fv
    )
    flags.DEFINE_string(
        "export_dir", "runs/digits/saved_model", "Where the SavedModel goes.", flag_values=fv
    )
    flags.DEFINE_string(
        "zoo_model",
        None,
        "Export this registered zoo model instead of --model_path (e.g. lambda_resnet26t).",
        flag_values=fv,
    )
    flags.DEFINE_string(
        "weights",
        None,
        "With --zoo_model: registered weights name, 'imagenet' or a .weights.h5 path.",
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "image_size",
        None,
        "Serving image side (default: the weights' size; else the model's input side, or 32 "
        "for a .keras file of any size, 224 for a zoo model).",
        flag_values=fv,
    )
    flags.DEFINE_float(
        "crop_fraction",
        None,
        "Centre-crop fraction of the serving graph (default: the weights', else 0.875).",
        flag_values=fv,
    )
    flags.register_validator(
        "image_size", lambda x: x is None or x >= 32, "--image_size must be >= 32.", flag_values=fv
    )
    register_check("crop_fraction", check_crop_fraction, fv, allow_none=True)
    return fv


def _load_model():
    """The model to export and the (image_size, crop_fraction) its weights were evaluated at."""
    FLAGS = flags.FLAGS
    from lambda_keras import zoo
    from lambda_keras.training.classification.evaluation import load_keras_file
    from lambda_keras.zoo import weights as weights_lib

    if FLAGS.zoo_model is None:
        if not os.path.exists(FLAGS.model_path):
            raise SystemExit(f"--model_path {FLAGS.model_path!r} does not exist.")
        try:
            model = load_keras_file(FLAGS.model_path)
        except ValueError as err:
            raise SystemExit(f"--model_path: {err}") from None
        return model, (model.input.shape[1] or 32, 0.875)
    try:
        info = zoo.model_info(FLAGS.zoo_model)
        spec = weights_lib.resolve_weights(FLAGS.weights, info.name)
        model = info.builder(weights=FLAGS.weights)
    except ValueError as err:
        raise SystemExit(f"--zoo_model/--weights: {err}") from None
    if isinstance(spec, weights_lib.WeightsSpec):
        return model, (spec.input_size, spec.crop_fraction)
    return model, (model.input.shape[1] or 224, 0.875)


def main(argv):
    del argv
    FLAGS = flags.FLAGS
    logging.set_verbosity(logging.WARNING)
    from lambda_keras.zoo.serving import export_for_serving

    model, (size, crop) = _load_model()
    size = FLAGS.image_size or size
    crop = FLAGS.crop_fraction or crop
    path = export_for_serving(model, FLAGS.export_dir, size, crop)
    source = FLAGS.zoo_model or FLAGS.model_path
    print(
        f"exported {source} to {path} at {size}x{size}, crop {crop} "
        "(signatures serve_images, serve_bytes)"
    )


if __name__ == "__main__":
    define_flags()
    app.run(main)
