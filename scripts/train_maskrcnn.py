"""Train Mask R-CNN on COCO-format data: ``python scripts/train_maskrcnn.py``.

With no flags: a Mask R-CNN on a LambdaResNet-50 backbone at width 0.25, trained on the embedded
shapes data (generated under --shapes_dir as COCO JSON + PNG files), evaluated with pycocotools'
COCOeval (box and mask AP), then saved as ``model.keras`` and a serving SavedModel under
--model_dir. Your data: --train_annotations --train_images --val_annotations --val_images.
``--recipe=paper`` is App. F.3's from-scratch set-up (1024 x 1024, batch 256, synchronised batch
norm), ``--recipe=finetune`` starts from --backbone_weights with frozen batch norm, or with
``--weights=coco`` from torchvision's COCO Mask R-CNN (``--backbone=torchvision_resnet``: all
but the class layers; a LambdaResNet-50 or ResNet-RS-50 backbone: its FPN, RPN and heads). A
killed run resumes from its last epoch when started again with the same --model_dir.

``--backend=jax`` trains with Keras on JAX (the TPU path: ``keras.distribution.DataParallel``
over every local device, several hosts joined by --coordinator_address --num_processes
--process_id), ``--backend=tensorflow`` (the default) with ``tf.distribute``; the input pipeline
is ``tf.data`` on both, the SavedModel is written by a TensorFlow process from ``model.keras``;
``--backend=torch`` trains on one device.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import placement_flags  # beside this script (its folder is on sys.path)

if __name__ == "__main__":  # before anything below imports Keras
    placement_flags.set_backend_from_argv()

from absl import app, flags, logging  # noqa: E402

from lambda_keras.training.detection import (  # noqa: E402
    BACKBONES,
    RECIPES,
    DetectionConfig,
    prepare_data,
    train,
)
from lambda_keras.training.flag_checks import register_checks  # noqa: E402

DEFAULTS = DetectionConfig()


def define_flags(flag_values: flags.FlagValues = flags.FLAGS) -> flags.FlagValues:
    """Define the script's flags and their checks on ``flag_values``."""
    fv = flag_values
    flags.DEFINE_string(
        "train_annotations", None, "COCO annotations JSON of the training set.", flag_values=fv
    )
    flags.DEFINE_string("train_images", None, "Image folder of the training set.", flag_values=fv)
    flags.DEFINE_string(
        "val_annotations", None, "COCO annotations JSON of the validation set.", flag_values=fv
    )
    flags.DEFINE_string("val_images", None, "Image folder of the validation set.", flag_values=fv)
    flags.DEFINE_string(
        "shapes_dir", DEFAULTS.shapes_dir, "Where the shapes data is generated.", flag_values=fv
    )
    flags.DEFINE_enum("recipe", DEFAULTS.recipe, list(RECIPES), "Training recipe.", flag_values=fv)
    flags.DEFINE_enum(
        "backbone", DEFAULTS.backbone, list(BACKBONES), "Backbone family.", flag_values=fv
    )
    flags.DEFINE_integer(
        "depth", DEFAULTS.depth, "Backbone depth (50, 101, ... 420).", flag_values=fv
    )
    flags.DEFINE_float(
        "width_multiplier",
        DEFAULTS.width_multiplier,
        "Backbone width (1.0: paper).",
        flag_values=fv,
    )
    flags.DEFINE_string(
        "backbone_weights", None, "Registered weights name or .weights.h5 file.", flag_values=fv
    )
    flags.DEFINE_string(
        "weights",
        None,
        "Start from torchvision's COCO Mask R-CNN: 'coco' (downloaded once) or a .weights.h5 "
        "from convert_torchvision. With --backbone=torchvision_resnet all but the class layers "
        "load; with another backbone of depth 50 and width 1, the FPN, RPN and heads.",
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "image_size", None, "Image side (a multiple of 64); default the recipe's.", flag_values=fv
    )
    flags.DEFINE_integer(
        "batch_size", None, "Global batch size; default the recipe's.", flag_values=fv
    )
    flags.DEFINE_integer("steps", None, "Training steps; default the recipe's.", flag_values=fv)
    flags.DEFINE_integer(
        "steps_per_epoch", DEFAULTS.steps_per_epoch, "Steps between checkpoints.", flag_values=fv
    )
    flags.DEFINE_integer(
        "max_instances", DEFAULTS.max_instances, "Ground-truth objects per image.", flag_values=fv
    )
    placement_flags.define_placement_flags(fv)
    flags.DEFINE_boolean(
        "jit_compile",
        DEFAULTS.jit_compile,
        "Compile the training step: with XLA on TensorFlow (JAX always compiles); on PyTorch "
        "also on a CPU (it compiles by default on a GPU: LAMBDA_KERAS_TORCH_COMPILE).",
        flag_values=fv,
    )
    flags.DEFINE_string(
        "model_dir", DEFAULTS.model_dir, "Checkpoints, logs and exports.", flag_values=fv
    )
    flags.DEFINE_boolean(
        "export", DEFAULTS.export, "Save model.keras and a serving SavedModel.", flag_values=fv
    )
    flags.DEFINE_integer("seed", DEFAULTS.seed, "Random seed.", flag_values=fv)
    # The config's own checks, with --name for `name`: one line before anything is built.
    register_checks(DetectionConfig.CHECKS, fv)
    return fv


def main(argv):
    del argv
    FLAGS = flags.FLAGS
    logging.set_verbosity(logging.WARNING)
    placement_flags.check_imported_backend(FLAGS.backend)
    verbose = 1 if sys.stdout.isatty() else 2
    config = placement_flags.config_from_flags(DetectionConfig, FLAGS, verbose=verbose)
    try:
        prepared = prepare_data(config)
    except (ValueError, FileNotFoundError) as err:  # a user's mistake in the data: one line
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    train(config, prepared)  # an error from here on is a bug: its traceback stays


if __name__ == "__main__":
    define_flags()
    app.run(main)
