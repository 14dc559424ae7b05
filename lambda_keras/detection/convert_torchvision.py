"""Convert a torchvision Mask R-CNN checkpoint to Keras weights.

    python -m lambda_keras.detection.convert_torchvision \\
        --model=maskrcnn_resnet50_fpn \\
        --checkpoint=maskrcnn_resnet50_fpn_coco-bf2d0c1e.pth \\
        --output=coco.weights.h5

The ``.pth`` is read without PyTorch (``lambda_keras.checkpoints``:
a restricted unpickler, both of torch.save's formats). Strict: every tensor of the
checkpoint is used once and every weight of the model is set; a checkpoint of another model
(Faster R-CNN, keypoint R-CNN, v1 for v2 and v2 for v1), a missing or extra tensor or a
shape that does not fit is an error naming the tensor, and nothing is written. The classes are
the checkpoint's (its ``cls_score`` rows minus the background). Load the result with
``maskrcnn_resnet50_fpn(weights=PATH, num_classes=...)`` (or ``maskrcnn_resnet50_fpn_v2``).
"""

from __future__ import annotations

import os

from lambda_keras import converter_cli
from lambda_keras.checkpoints import read_checkpoint
from lambda_keras.detection.torchvision import checkpoint as torchvision_checkpoint
from lambda_keras.zoo import weights as weights_lib

__all__ = ["MODELS", "convert"]

MODELS = ("maskrcnn_resnet50_fpn", "maskrcnn_resnet50_fpn_v2")
"""The torchvision models whose state dicts convert (``--model``)."""


def convert(model_name: str, checkpoint: str | os.PathLike, output: str | os.PathLike) -> str:
    """Convert ``checkpoint`` (torchvision's ``model_name``) to ``output`` (``.weights.h5``),
    written atomically and only when every tensor converted. Returns ``output``."""
    from lambda_keras.detection.torchvision import mask_rcnn

    if model_name not in MODELS:
        raise ValueError(f"`model` must be one of {', '.join(MODELS)}; received {model_name!r}.")
    output = os.fspath(output)
    if not output.endswith(".weights.h5"):
        raise ValueError(f"`output` must end in .weights.h5; received {output!r}.")
    state = torchvision_checkpoint.normalise_names(read_checkpoint(checkpoint))
    classes = torchvision_checkpoint.checkpoint_num_classes(state)
    model = getattr(mask_rcnn, model_name)(weights=None, num_classes=classes)
    torchvision_checkpoint.assign_checkpoint(model, state)
    weights_lib.save_weights_atomically(model, output)
    return output


def define_flags(flag_values=None):
    """The command line's flags on ``flag_values`` (absl's global ``FLAGS`` by default)."""
    return converter_cli.define_flags(
        flag_values, MODELS, "torchvision's model.", "torchvision checkpoint (.pth)."
    )


def main(argv) -> None:
    del argv
    converter_cli.run(convert, "convert_torchvision")


if __name__ == "__main__":
    from absl import app

    define_flags()
    app.run(main)
