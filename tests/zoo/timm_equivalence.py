"""The Keras ports against timm's own models (its LambdaResNets and ResNet-RS), given the same
(random) weights.

Run as a script (PyTorch must be imported before TensorFlow in one process)::

    python tests/zoo/timm_equivalence.py [--models=a,b] [--write-shapes=PATH]

For each model: timm builds it with a fixed seed; every batch-norm's affine parameters and
statistics and every lambda-convolution bias are perturbed so that they matter; the state dict
is served as the registered ``weights="imagenet"`` file by a Hugging Face Hub on 127.0.0.1
(``tests/pretrained_mirror.py``) and loaded through the registry as a user loads it
(``get_model(name, weights="imagenet")``: download, check, conversion, cache). Both classify
the same batch of real photos (scikit-learn's two sample photos, two crops each, timm's
evaluation transform and normalisation). One line per model: the largest absolute logit
difference, the logit scale and whether the top-5 agree.
``--write-shapes`` also writes every tensor's name and shape (the converter test's fixture).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests.pretrained_mirror

import numpy as np
import timm
import torch  # before TensorFlow

from lambda_keras.preprocessing import eval_image
from lambda_keras.zoo import registry, resnet_rs, timm_lambda_resnet
from lambda_keras.zoo.applications import preprocess_input
from lambda_keras.zoo.convert_timm import MODELS, RESNET_RS


def timm_name(name: str) -> str:
    return name.replace("resnet_rs", "resnetrs") if name in RESNET_RS else name


def evaluation(name: str) -> tuple[int, float]:
    """(image size, crop fraction) of timm's evaluation of the model's weights."""
    if name in RESNET_RS:
        weights = resnet_rs.TIMM_WEIGHTS[int(name.removeprefix("resnet_rs"))]
        return weights.test_size, weights.crop_fraction
    spec = timm_lambda_resnet.SPECS[name]
    return spec.image_size, spec.crop_fraction


def photos(name: str) -> np.ndarray:
    """``[4, size, size, 3]`` normalised: two real photos, each centre-cropped at the model's
    evaluation size and crop fraction, and at 0.6 (a closer view)."""
    from sklearn.datasets import load_sample_images

    size, crop_fraction = evaluation(name)
    images = []
    for image in load_sample_images().images:
        for fraction in (crop_fraction, 0.6):
            crop = eval_image(image, size, fraction)
            images.append(np.asarray(crop))
    return np.asarray(preprocess_input(np.stack(images)), dtype="float32")


def perturbed_timm_model(name: str, seed: int = 0) -> torch.nn.Module:
    """timm's model with a fixed seed; batch norms and lambda-convolution biases perturbed.

    Every batch norm gets random affine parameters and statistics. The last batch norm of each
    residual branch (zero at timm's initialisation) gets a small scale, so that residual sums
    keep trained-network magnitudes."""
    torch.manual_seed(seed)
    model = timm.create_model(timm_name(name), pretrained=False).eval()
    generator = torch.Generator().manual_seed(seed + 1)

    def draw(n, low, high):
        return torch.empty(n).uniform_(low, high, generator=generator)

    with torch.no_grad():
        for module_name, module in model.named_modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                c = module.num_features
                last = module_name.endswith(("conv3_1x1.bn", "bn3"))
                module.weight.copy_(draw(c, 0.2, 0.5) if last else draw(c, 0.5, 1.5))
                module.bias.copy_(draw(c, -0.2, 0.2))
                module.running_mean.copy_(draw(c, -0.2, 0.2))
                module.running_var.copy_(draw(c, 0.5, 2.0))
            if isinstance(module, torch.nn.Conv3d) and module.bias is not None:
                module.bias.copy_(draw(module.bias.shape[0], -0.5, 0.5))
    return model


def scale_classifier(model: torch.nn.Module, x: torch.Tensor, largest: float = 10.0) -> None:
    """Rescale timm's N(0, 0.01) classifier so that the largest logit on ``x`` is ``largest``
    (a trained model's range), which makes the 1e-4 tolerance a strict one."""
    with torch.no_grad():
        factor = largest / model(x).abs().max()
        model.get_classifier().weight.mul_(factor)
        model.get_classifier().bias.mul_(factor)


def load_through_the_registry(name: str, state: dict, workdir: str):
    """``get_model(name, weights="imagenet")`` with ``state`` served by a local Hub at the
    registered commit, into a fresh cache under ``workdir``."""
    import pytest

    from lambda_keras.zoo import weights as weights_lib
    from tests.pretrained_mirror import pretrained_mirror, publish

    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(weights_lib, "CACHE_DIR", os.path.join(workdir, "cache"))
        with pretrained_mirror(monkeypatch) as hub:
            publish(hub, name, monkeypatch, state=state)
            return registry.get_model(name, weights="imagenet", classifier_activation=None)


def compare(name: str, workdir: str) -> dict:
    model = perturbed_timm_model(name)
    x = photos(name)
    torch_x = torch.from_numpy(x).permute(0, 3, 1, 2)
    scale_classifier(model, torch_x)
    state = {k: v.detach().contiguous().numpy() for k, v in model.state_dict().items()}
    with torch.no_grad():
        expected = model(torch_x).numpy()
    keras_model = load_through_the_registry(name, state, workdir)
    import keras  # after torch

    actual = np.asarray(keras.ops.convert_to_numpy(keras_model(x, training=False)))
    top5 = [
        list(np.argsort(-row)[:5]) == list(np.argsort(-ref)[:5])
        for row, ref in zip(actual, expected, strict=True)
    ]
    return {
        "diff": float(np.abs(actual - expected).max()),
        "scale": float(np.abs(expected).max()),
        "top5": all(top5),
        "shapes": {k: list(v.shape) for k, v in state.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default=",".join(timm_lambda_resnet.SPECS))
    parser.add_argument("--write-shapes", default=None)
    args = parser.parse_args()
    torch.set_num_threads(2)
    shapes = {}
    with tempfile.TemporaryDirectory() as workdir:
        for name in args.models.split(","):
            if name not in MODELS:
                parser.error(f"--models: {name!r} is not one of {', '.join(MODELS)}")
            result = compare(name, workdir)
            shapes[name] = result["shapes"]
            print(
                f"model={name} max_abs_diff={result['diff']:.3g} logit_scale="
                f"{result['scale']:.3g} top5_equal={result['top5']}",
                flush=True,
            )
    if args.write_shapes:
        with open(args.write_shapes, "w") as f:
            json.dump(shapes, f, indent=1, sort_keys=True)
            f.write("\n")


if __name__ == "__main__":
    main()
