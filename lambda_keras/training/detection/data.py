"""A run's data: the COCO-format sets (or labelme folders, or the generated shapes data) read
and checked, the training ``tf.data`` pipeline, and the settings a killed run must resume with,
all before a model is built."""

from __future__ import annotations

import dataclasses
import os

from lambda_keras.training import resume
from lambda_keras.training.detection.config import (
    RESUMABLE_CHANGES,
    DetectionConfig,
    DetectionRun,
    resolve_run,
)
from lambda_keras.training.detection.datasets import coco
from lambda_keras.training.distribute import Placement

__all__ = ["PreparedData", "prepare_data", "sources"]


def sources(config: DetectionConfig):
    """The training and validation
    [`CocoSource`][lambda_keras.training.detection.datasets.coco.CocoSource]."""
    given = [
        config.train_annotations,
        config.train_images,
        config.val_annotations,
        config.val_images,
    ]
    pairs = (given[:2], given[2:])
    complete = all(ann and (images or _is_labelme(ann)) for ann, images in pairs)
    if any(given) and not complete:
        raise ValueError(
            "--train_annotations, --train_images, --val_annotations and --val_images go "
            "together (all four, or none for the generated shapes data; with "
            "--train_annotations=labelme:DIR the images flag of that set may be left out)."
        )
    if not any(given):
        from lambda_keras.training.detection.datasets.shapes import write_shapes_dataset

        paths = write_shapes_dataset(config.shapes_dir, seed=config.seed)
        given = [
            paths[k] for k in ("train_annotations", "train_images", "val_annotations", "val_images")
        ]
    elif any(_is_labelme(ann) for ann, _ in pairs):
        given = _from_labelme(given, config.model_dir)
    train = coco.load_coco(given[0], given[1])
    val = coco.load_coco(given[2], given[3])
    if val.category_ids != train.category_ids:
        raise ValueError(
            f"The validation categories {val.category_ids} differ from the training ones "
            f"{train.category_ids}."
        )
    return train, val


def _is_labelme(annotations) -> bool:
    from lambda_keras.training.detection.datasets.labelme import PREFIX

    return str(annotations).startswith(PREFIX)


def _from_labelme(given: list, model_dir: str) -> list:
    """labelme folders -> COCO files in ``model_dir`` (``labelme_train.json``,
    ``labelme_val.json``), one category list for both: the union of their labels."""
    from lambda_keras.training.detection.datasets import labelme

    folders = {
        split: str(ann).removeprefix(labelme.PREFIX)
        for split, ann in (("train", given[0]), ("val", given[2]))
        if _is_labelme(ann)
    }
    labels = sorted(set().union(*(labelme.folder_labels(f) for f in folders.values())))
    given = list(given)
    for split, folder in folders.items():
        index = 0 if split == "train" else 2
        output = os.path.join(model_dir, f"labelme_{split}.json")
        given[index] = labelme.write_coco(folder, output, labels)
        given[index + 1] = folder
    return given


@dataclasses.dataclass(frozen=True)
class PreparedData:
    """The resolved run, its checked data, what
    [`prepare_data`][lambda_keras.training.detection.data.prepare_data] read, and where it runs
    (made first: a TPU is connected, or JAX's hosts joined, before any other op)."""

    run: DetectionRun
    train_source: coco.CocoSource
    val_source: coco.CocoSource
    train_data: object  # tf.data.Dataset of (images, targets)
    placement: Placement
    resume_settings: dict  # checked against a killed run's, recorded when training starts


def prepare_data(config: DetectionConfig) -> PreparedData:
    """Read and check the run's data (or write the shapes data). Every mistake in the data
    (a file, an annotation, an image) raises ``ValueError``/``FileNotFoundError`` here, before
    a model is built: the scripts report these as one line, and anything later as a bug. So
    does resuming a killed run in ``model_dir`` with other settings
    ([`lambda_keras.training.resume.check_resume`][lambda_keras.training.resume.check_resume]; the
    backup stays)."""
    run = resolve_run(config)
    placement = config.placement.make()
    placement.check_batch_size(run.batch_size)
    train_source, val_source = sources(config)
    settings = resume.run_settings(
        config,
        RESUMABLE_CHANGES,
        image_size=run.image_size,
        batch_size=run.batch_size,
        steps=run.steps,
        category_ids=list(train_source.category_ids),
    )
    resume.check_resume(config.model_dir, settings)
    data = coco.make_dataset(
        train_source,
        image_size=run.image_size,
        global_batch_size=run.batch_size,
        training=True,
        max_instances=config.max_instances,
        scale_range=run.recipe.scale_range,
        seed=config.seed,
    )
    return PreparedData(run, train_source, val_source, data, placement, settings)
