"""Top-1 / top-5 accuracy of a ``.keras`` model or a serving SavedModel on a data split."""

from __future__ import annotations

import math
import os

import keras
import numpy as np
import tensorflow as tf

from lambda_keras.training.classification import data

__all__ = ["evaluate", "load_keras_file", "result_line", "top_k_accuracy"]


def top_k_accuracy(model: keras.Model, dataset: tf.data.Dataset) -> dict:
    """Top-1 / top-5 of ``model`` over batches ``(images, one-hot labels)``, on this process
    alone (no distribution strategy involved)."""
    scores, labels = [], []
    for images, onehot in dataset:
        scores.append(keras.ops.convert_to_numpy(model(images, training=False)).astype("float32"))
        labels.append(onehot.numpy().argmax(axis=-1))
    return _accuracy(np.concatenate(scores), np.concatenate(labels))


def evaluate(
    model_path: str,
    source: data.Source,
    image_size: int,
    batch_size: int = 64,
    crop_fraction: float = 0.875,
) -> dict:
    """Accuracy of the model at ``model_path`` on ``source``.

    A ``.keras`` file is evaluated on the evaluation pipeline (centre crop, ImageNet
    normalisation); a SavedModel directory written by ``export_for_serving`` through its
    ``serve_images`` signature, one image at a time (its graph does the preprocessing).

    Returns:
        ``top1``, ``top5``, ``examples`` (the images scored) and ``skipped`` (damaged or truncated
        files of the split left out, ``Source.skipped``).
    """
    result = _scores(model_path, source, image_size, batch_size, crop_fraction)
    return {**result, "skipped": len(source.skipped)}


def _scores(model_path, source, image_size, batch_size, crop_fraction) -> dict:
    if model_path.endswith(".keras"):
        if not os.path.exists(model_path):
            raise ValueError(f"The model file {model_path!r} does not exist.")
        model = load_keras_file(model_path)
        output_shape = model.compute_output_shape((None, image_size, image_size, 3))
        _check_classes(output_shape[-1], source, model_path)
        dataset = data.make_dataset(
            source,
            training=False,
            image_size=image_size,
            global_batch_size=batch_size,
            crop_fraction=crop_fraction,
        )
        return top_k_accuracy(model, dataset)
    if os.path.isdir(model_path) and os.path.exists(os.path.join(model_path, "saved_model.pb")):
        serve = tf.saved_model.load(model_path).signatures["serve_images"]
        _check_classes(serve.structured_outputs["probabilities"].shape[-1], source, model_path)
        scores, labels = [], []
        for image, label in source.dataset:
            scores.append(serve(images=image[None])["probabilities"].numpy())
            labels.append([int(label)])
        return _accuracy(np.concatenate(scores), np.concatenate(labels))
    raise ValueError(
        f"--model_path must be a .keras file or a SavedModel directory; received {model_path!r}."
    )


def load_keras_file(path: str) -> keras.Model:
    """``keras.saving.load_model`` without the compile config (scoring and exporting need no
    optimizer, and a file written on PyTorch names a PyTorch-only one), a damaged or truncated
    file reported as such."""
    try:
        return keras.saving.load_model(path, compile=False)
    except (OSError, ValueError, KeyError, EOFError) as err:
        if "zip" in str(err).lower() or isinstance(err, (OSError, EOFError, KeyError)):
            raise ValueError(
                f"The model file {path!r} is damaged or truncated (not a readable .keras "
                f"archive): {err}"
            ) from err
        raise


def _check_classes(model_classes, source: data.Source, model_path: str) -> None:
    if model_classes is not None and model_classes != source.num_classes:
        raise ValueError(
            f"The model {model_path!r} predicts {model_classes} classes but the data set has "
            f"{source.num_classes}: its accuracy would mean nothing. Evaluate on the data set "
            "it was trained on."
        )


def _accuracy(scores: np.ndarray, labels: np.ndarray) -> dict:
    top5 = np.argsort(-scores, axis=-1)[:, :5]
    return {
        "examples": int(len(labels)),
        "top1": float(np.mean(top5[:, 0] == labels)),
        "top5": float(np.mean((top5 == labels[:, None]).any(axis=-1))),
    }


def result_line(eval_split: str, result: dict) -> str:
    """A training run's last line: the scores, how long it trained and, when any split left
    damaged files out, how many of each (their paths are printed when the data is read)."""
    line = (
        f"{eval_split} top-1 {result['top1']:.4f}, top-5 {result['top5']:.4f} "
        f"({math.ceil(result['train_seconds'])} s of training, {result['steps']} steps"
    )
    if any(result["skipped"].values()):
        counts = ", ".join(f"{n} of {split}" for split, n in result["skipped"].items())
        line += f"; damaged image files skipped: {counts}, listed above"
    return line + ")"
