"""The converted ``maskrcnn_resnet50_fpn`` (or ``_v2``) against torchvision's own model, given
the same (random) weights, on real photos.

Run as a script (PyTorch must be imported before TensorFlow in one process)::

    KERAS_BACKEND=jax python tests/detection/torchvision/equivalence.py [--workdir=DIR] \
        [--model=maskrcnn_resnet50_fpn_v2]

torchvision builds the model (91 labels) with a fixed seed; the batch norms of its backbone (and
of v2's FPN) take their statistics from the photos, those of v2's heads random ones, and all
their affine parameters are perturbed; for v1 every epsilon is set to 0 and each batch norm made
torchvision's ``FrozenBatchNorm2d`` (as in torchvision's COCO model; v2 keeps 1e-5); the class,
box and objectness layers are scaled so that detections are many and varied. The state dict is
saved as ``.pth``, converted with ``python -m lambda_keras.detection.convert_torchvision`` and
loaded by
``maskrcnn_resnet50_fpn(weights=...)``, which is exported as a SavedModel with
``export_detector`` (no ``image_size``) where Keras runs on TensorFlow. Both detect on each photo
(scikit-image and scikit-learn samples: landscape, upright and square) at torchvision's own
preprocessing: the SavedModel's ``serving_default`` (``summary``, TensorFlow) and
:func:`lambda_keras.detection.detect` on the process's Keras backend (``detect_summary``).
Detections are matched greedily by class and box IoU >= 0.9; one line per photo, then a summary
line. ``--litert`` also
converts the detector with ``export_detector_litert`` and compares LiteRT's interpreter the
same way (``litert_summary``). Scores below 0.3 are
dropped on both sides, so that on some photos the threshold and on others the best-100 cut
decides what is kept.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import torch  # before TensorFlow
import torchvision

LABELS = 91
SEED = 0
# Above the lowest scores of some photos' best 100 only: both the threshold and the top-100 cut
# decide which detections are kept.
SCORE_THRESHOLD = 0.3


def photos(count: int) -> dict[str, np.ndarray]:
    import skimage.data
    from sklearn.datasets import load_sample_images

    china, flower = load_sample_images().images
    found = {
        "chelsea": skimage.data.chelsea(),  # 300 x 451
        "china": china,  # 427 x 640
        "coffee": skimage.data.coffee(),  # 400 x 600
        "flower": flower[:, 60:380],  # 427 x 320, upright
        "rocket": skimage.data.rocket(),  # 427 x 640
        "astronaut": skimage.data.astronaut(),  # 512 x 512, square (last: the model is
        # calibrated on the first photo)
    }
    return dict(list(found.items())[:count])


def torchvision_model(images: list[np.ndarray], name: str) -> torch.nn.Module:
    torch.manual_seed(SEED)
    builder = getattr(torchvision.models.detection, name)
    model = builder(weights=None, weights_backbone=None, num_classes=LABELS)
    norms = [m for m in model.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    for bn in norms:
        bn.momentum = None  # running statistics = the mean over the calibration batches
        bn.reset_running_stats()
    model.train()
    with torch.no_grad():
        for image in images:  # one batch per photo: statistics from real photos
            batch, _ = model.transform([as_tensor(image)])
            model.backbone(batch.tensors)
    model.eval()
    model.roi_heads.score_thresh = SCORE_THRESHOLD
    generator = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for bn in norms:
            if name == "maskrcnn_resnet50_fpn":
                bn.eps = 0.0
            if not bn.num_batches_tracked:  # not calibrated (v2's heads): random statistics
                bn.running_mean.normal_(0.0, 0.1, generator=generator)
                bn.running_var.uniform_(0.5, 2.0, generator=generator)
            bn.weight.mul_(0.5 + torch.rand(bn.weight.shape, generator=generator))
            bn.bias.add_(0.1 * torch.randn(bn.bias.shape, generator=generator))
        if name == "maskrcnn_resnet50_fpn":
            frozen_batch_norms(model)
        scale_outputs(model, images[0])
    return model


def frozen_batch_norms(model: torch.nn.Module) -> None:
    """Every ``BatchNorm2d`` (calibrated, eps 0) replaced by torchvision's ``FrozenBatchNorm2d``
    with its statistics and parameters: the module torchvision's COCO v1 model has, and the one
    PyTorch 2.11 runs with eps 0 (its ``F.batch_norm`` refuses eps 0)."""
    from torchvision.ops import FrozenBatchNorm2d

    for parent in list(model.modules()):
        for child_name, child in list(parent.named_children()):
            if isinstance(child, torch.nn.BatchNorm2d):
                frozen = FrozenBatchNorm2d(child.num_features, eps=child.eps)
                for buffer in ("weight", "bias", "running_mean", "running_var"):
                    getattr(frozen, buffer).copy_(getattr(child, buffer).detach())
                setattr(parent, child_name, frozen)


def scale_outputs(model, image) -> None:
    """Scale the heads' last layers so that their outputs have a chosen spread."""
    seen = {}

    def keep(name):
        return lambda module, inputs, output: seen.__setitem__(name, output)

    heads = model.roi_heads.box_predictor
    layers = {"cls": heads.cls_score, "box": heads.bbox_pred, "rpn": model.rpn.head.bbox_pred}
    hooks = [layer.register_forward_hook(keep(name)) for name, layer in layers.items()]
    model([as_tensor(image)])
    for hook in hooks:
        hook.remove()
    targets = {"cls": 1.5, "box": 1.0, "rpn": 0.1}
    for name, layer in layers.items():
        values = seen[name][0] if isinstance(seen[name], (list, tuple)) else seen[name]
        factor = targets[name] / float(values.std())
        layer.weight.mul_(factor)
        layer.bias.mul_(factor)


def as_tensor(image: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(image).permute(2, 0, 1).float() / 255.0


def torchvision_detections(model, image) -> dict[str, np.ndarray]:
    with torch.no_grad():
        out = model([as_tensor(image)])[0]
    boxes = out["boxes"].numpy()[:, [1, 0, 3, 2]]  # (x1, y1, x2, y2) -> (y1, x1, y2, x2)
    return {
        "boxes": boxes,
        "scores": out["scores"].numpy(),
        "classes": out["labels"].numpy() - 1,
        "masks": out["masks"].numpy()[:, 0] >= 0.5,
    }


def iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``[n, 4]`` x ``[m, 4]`` -> ``[n, m]``."""
    tl = np.maximum(a[:, None, :2], b[None, :, :2])
    br = np.minimum(a[:, None, 2:], b[None, :, 2:])
    inter = np.prod(np.clip(br - tl, 0, None), -1)
    area = lambda x: np.prod(x[:, 2:] - x[:, :2], -1)  # noqa: E731
    return inter / np.maximum(area(a)[:, None] + area(b)[None, :] - inter, 1e-9)


def paste_box(box: np.ndarray, size: int = 28) -> tuple[int, ...]:
    """The integer box torchvision pastes a ``size`` x ``size`` mask into
    (``paste_masks_in_image``: the box widened by ``(size + 2) / size``, corners truncated)."""
    y0, x0, y1, x1 = box
    scale = (size + 2) / size
    half_h, half_w = (y1 - y0) * 0.5 * scale, (x1 - x0) * 0.5 * scale
    yc, xc = (y1 + y0) * 0.5, (x1 + x0) * 0.5
    return tuple(int(v) for v in np.float32([xc - half_w, yc - half_h, xc + half_w, yc + half_h]))


def compare(ref: dict, got: dict) -> dict:
    """Detections matched greedily by class and IoU >= 0.9. Masks are compared where both are
    pasted into the same integer box: a box edge a hundredth of a pixel from an integer can
    move torchvision's own paste by a pixel, so such pairs are counted (``paste_box_flips``)
    and their boxes are held to ``max_box_diff`` instead."""
    overlaps = iou(ref["boxes"], got["boxes"])
    same_class = ref["classes"][:, None] == got["classes"][None, :]
    overlaps = np.where(same_class, overlaps, 0.0)
    used, pairs = set(), []
    for i in range(len(ref["scores"])):
        order = [j for j in np.argsort(-overlaps[i]) if j not in used and overlaps[i, j] >= 0.9]
        if order:
            used.add(order[0])
            pairs.append((i, order[0]))
    unmatched = sorted(set(range(len(ref["scores"]))) - {i for i, _ in pairs})
    box = max((np.abs(ref["boxes"][i] - got["boxes"][j]).max() for i, j in pairs), default=0.0)
    score = max((abs(ref["scores"][i] - got["scores"][j]) for i, j in pairs), default=0.0)
    same = [paste_box(ref["boxes"][i]) == paste_box(got["boxes"][j]) for i, j in pairs]
    pixels = [
        np.mean(ref["masks"][i] != got["masks"][j])
        for (i, j), s in zip(pairs, same, strict=True)
        if s
    ]
    return {
        "torchvision": len(ref["scores"]),
        "keras": len(got["scores"]),
        "matched": len(pairs),
        "max_box_diff": float(box),
        "max_score_diff": float(score),
        "max_mask_pixels_differing": float(max(pixels, default=0.0)),
        "paste_box_flips": len(pairs) - sum(same),
        "unmatched": ",".join(f"{i}:{ref['scores'][i]:.4f}" for i in unmatched) or "-",
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--photos", type=int, default=6)
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--litert", action="store_true", help="also the LiteRT export")
    parser.add_argument("--onnx", action="store_true", help="also the ONNX export")
    parser.add_argument(
        "--model",
        default="maskrcnn_resnet50_fpn",
        choices=["maskrcnn_resnet50_fpn", "maskrcnn_resnet50_fpn_v2"],
    )
    args = parser.parse_args()
    workdir = args.workdir or tempfile.mkdtemp()
    images = photos(args.photos)
    torch.set_num_threads(2)
    model = torchvision_model(list(images.values()), args.model)
    checkpoint = os.path.join(workdir, "maskrcnn.pth")
    torch.save(model.state_dict(), checkpoint)
    references = {name: torchvision_detections(model, image) for name, image in images.items()}
    weights = os.path.join(workdir, "maskrcnn.weights.h5")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "lambda_keras.detection.convert_torchvision",
            f"--model={args.model}",
            f"--checkpoint={checkpoint}",
            f"--output={weights}",
        ],
        check=True,
    )
    import keras

    from lambda_keras.detection import detect
    from lambda_keras.detection.torchvision import mask_rcnn

    keras_model = getattr(mask_rcnn, args.model)(
        weights=weights, num_classes=LABELS - 1, score_threshold=SCORE_THRESHOLD
    )
    print(
        f"backend={keras.backend.backend()} lowest scores kept: "
        + " ".join(f"{name}={references[name]['scores'].min():.4f}" for name in images)
    )
    print_comparison(
        "detect_summary", references, images, lambda image: served(detect(keras_model, image))
    )
    if keras.backend.backend() == "tensorflow":
        compare_exports(keras_model, references, images, workdir, args.litert)
        if args.onnx:
            detect_onnx = OnnxDetector(keras_model, workdir)
            print_comparison("onnx_summary", references, images, detect_onnx)


def served(out: dict) -> dict[str, np.ndarray]:
    """The valid detections of a serving output (``detect``'s, LiteRT's, the SavedModel's)."""
    n = int(np.asarray(out["num_detections"]))
    return {
        "boxes": np.asarray(out["boxes"])[:n],
        "scores": np.asarray(out["scores"])[:n],
        "classes": np.asarray(out["classes"])[:n],
        "masks": np.asarray(out["masks"])[:n].astype(bool),
    }


class OnnxDetector:
    """The model as ONNX files (one per canvas, ``export_detector_onnx``) in onnxruntime,
    between the transform's resize and its mapping back into the photo."""

    def __init__(self, keras_model, workdir: str):
        self.model, self.workdir, self.sessions = keras_model, workdir, {}

    def session(self, canvas):
        import onnxruntime

        from lambda_keras.detection.serving import export_detector_onnx

        if canvas not in self.sessions:
            path = os.path.join(self.workdir, f"detector_{canvas[0]}x{canvas[1]}.onnx")
            export_detector_onnx(self.model, path, canvas=canvas)
            self.sessions[canvas] = onnxruntime.InferenceSession(path)
        return self.sessions[canvas]

    def __call__(self, image):
        import tensorflow as tf

        from lambda_keras.detection.detect import outputs

        transform = self.model.input_transform()
        size = transform.resized_size(*image.shape[:2])
        canvases, first = transform.canvases(size)
        canvas = canvases[0] if first else canvases[1]
        padded = np.zeros((1, *canvas, 3), "float32")
        padded[0, : size[0], : size[1]] = tf.image.resize(tf.cast(image, tf.float32), size)
        session = self.session(canvas)
        names = [i.name for i in session.get_inputs()]
        feeds = {
            next(n for n in names if n.endswith("image_sizes")): np.array([size], "int32"),
            next(n for n in names if n.endswith("images")): padded,
        }
        values = session.run(None, feeds)
        out = dict(zip([o.name for o in session.get_outputs()], values, strict=True))
        boxes, masks = transform.to_photo(out["boxes"][0], out["masks"][0], size, image.shape[:2])
        return served({k: np.asarray(v) for k, v in outputs(out, boxes, masks).items()})


def compare_exports(keras_model, references, images, workdir, litert: bool) -> None:
    import tensorflow as tf

    from lambda_keras.detection.serving import export_detector

    saved = tf.saved_model.load(export_detector(keras_model, os.path.join(workdir, "sm")))
    signature = saved.signatures["serving_default"]
    print_comparison(
        "summary",
        references,
        images,
        lambda image: served({k: v.numpy() for k, v in signature(image=image).items()}),
    )
    if litert:
        from lambda_keras.detection.serving import export_detector_litert

        path = export_detector_litert(keras_model, os.path.join(workdir, "detector.tflite"))
        interpreter = tf.lite.Interpreter(model_path=path)
        runner = interpreter.get_signature_runner("serving_default")
        print_comparison(
            "litert_summary", references, images, lambda image: served(runner(image=image))
        )


def print_comparison(title, references, images, detect) -> None:
    totals = {"torchvision": 0, "keras": 0, "matched": 0, "paste_box_flips": 0}
    worst = {"max_box_diff": 0.0, "max_score_diff": 0.0, "max_mask_pixels_differing": 0.0}
    for name, image in images.items():
        result = compare(references[name], detect(image))
        print(
            f"{title} photo={name} shape={image.shape[:2]} "
            + " ".join(
                f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}" for k, v in result.items()
            )
        )
        for key in totals:
            totals[key] += result[key]
        for key in worst:
            worst[key] = max(worst[key], result[key])
    share = totals["matched"] / max(totals["torchvision"], totals["keras"], 1)
    print(
        f"{title} matched_share={share:.4f} "
        + " ".join(f"{k}={v}" for k, v in {**totals, **worst}.items())
    )


if __name__ == "__main__":
    main()
