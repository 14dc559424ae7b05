"""Train and evaluate Mask R-CNN on COCO-format data: ``model.fit`` under the run's strategy,
COCOeval on the validation set, the exports.

A killed run resumes from its last epoch (``keras.callbacks.BackupAndRestore`` under ``model_dir``)
when started again with the same settings; other settings are an error naming them, and the backup
stays ([`lambda_keras.training.resume`][lambda_keras.training.resume]).
"""

from __future__ import annotations

import os
import time

import keras
import numpy as np

from lambda_keras.backend.compile_report import CompileReport
from lambda_keras.training import resume
from lambda_keras.training.detection import evaluation
from lambda_keras.training.detection.config import DetectionConfig
from lambda_keras.training.detection.data import PreparedData, prepare_data
from lambda_keras.training.detection.model import build_model
from lambda_keras.training.export import export_run

__all__ = ["train"]


def train(config: DetectionConfig, prepared: PreparedData | None = None) -> dict:
    """Train, evaluate with COCOeval on the validation set, export; returns the scores.
    ``prepared``: the run's [`prepare_data`][lambda_keras.training.detection.data.prepare_data]
    (read here when not given)."""
    prepared = prepared or prepare_data(config)
    with prepared.placement.run_scope():
        return _train(config, prepared)


def _train(config: DetectionConfig, prepared: PreparedData) -> dict:
    keras.utils.set_random_seed(config.seed)
    run, placement = prepared.run, prepared.placement
    recipe, image_size, batch_size = run.recipe, run.image_size, run.batch_size
    train_source, val_source, data = prepared.train_source, prepared.val_source, prepared.train_data
    os.makedirs(config.model_dir, exist_ok=True)
    epochs = max(1, -(-run.steps // config.steps_per_epoch))
    with placement.variable_scope():
        model = build_model(run, train_source.num_classes)
        # Build every layer (BackupAndRestore needs the variables before fit).
        model(np.zeros((1, image_size, image_size, 3), "float32"))
        model.compile(
            optimizer=recipe.make_optimizer(batch_size, epochs * config.steps_per_epoch),
            jit_compile=_jit_compile(config.jit_compile),
        )
        # Slots now, not in the first traced step (which would then be traced twice).
        model.optimizer.build(model.trainable_variables)
    if placement.chief:
        resume.record_settings(config.model_dir, prepared.resume_settings)
    print(placement.description)
    print(
        f"Mask R-CNN, {config.backbone}{config.depth} backbone (width {config.width_multiplier}), "
        f"{train_source.num_classes} classes, {len(train_source.image_ids)} training images, "
        f"recipe {recipe.name}: {epochs} x {config.steps_per_epoch} steps at batch {batch_size}, "
        f"{image_size}x{image_size}, on {keras.backend.backend()}."
    )
    if train_source.skipped:
        print(f"Skipped {len(train_source.skipped)} annotations (degenerate box or empty mask).")
    report = CompileReport()  # PyTorch: what compiling each step cost (minutes on a GPU)
    callbacks = [
        resume.AtomicBackupAndRestore(os.path.join(config.model_dir, resume.BACKUP_DIR)),
        keras.callbacks.CSVLogger(os.path.join(config.model_dir, "log.csv"), append=True),
        report,
    ]
    start = time.perf_counter()
    history = model.fit(
        data,
        epochs=epochs,
        steps_per_epoch=config.steps_per_epoch,
        callbacks=callbacks,
        verbose=config.verbose,
    )
    seconds = time.perf_counter() - start
    scores = evaluation.evaluate(model, val_source, image_size=image_size, batch_size=batch_size)
    report.on_predict_batch_end(0)  # predict_on_batch runs no callbacks: its compile, if any
    result = {"scores": scores, "train_seconds": seconds, "model": model}
    result["history"] = history.history
    result["dropped_targets"] = _dropped_targets(history.history)
    if config.export and placement.chief:
        result.update(_export(model, config, train_source, image_size))
    print("\n".join(_result_lines(scores, seconds, result["dropped_targets"])))
    return result


def _dropped_targets(history: dict) -> int:
    """Target rows the steps of this ``fit`` left out of the loss (the ``dropped_targets``
    metric, a sum per epoch); a resumed run's earlier epochs are in ``log.csv``."""
    return int(round(sum(history.get("dropped_targets", ()))))


def _result_lines(scores: dict, seconds: float, dropped: int) -> list[str]:
    """The run's last lines: its scores, then the target rows it left out, if any."""
    lines = [
        f"AP50: box {scores['bbox']['AP50']:.3f}, mask {scores['segm']['AP50']:.3f}.",
        f"box AP {scores['bbox']['AP']:.3f}, mask AP {scores['segm']['AP']:.3f} "
        f"(IoU .50:.95) after {seconds:.0f} s of training.",
    ]
    if dropped:
        lines.append(
            f"Left out of the loss: {dropped} target rows (objects) that break the rule of "
            "lambda_keras.detection.target_checks, in this process's epochs (log.csv has each "
            "epoch's count); the scores above were trained without them."
        )
    return lines


def _jit_compile(flag: bool) -> bool | str:
    """``model.compile``'s ``jit_compile`` from ``--jit_compile``: JAX always compiles (op by
    op would be its slowest path); TensorFlow's step with XLA as the flag says; PyTorch's step
    compiles with the flag, and by default where ``LAMBDA_KERAS_TORCH_COMPILE`` says (``auto``:
    on a GPU)."""
    backend = keras.backend.backend()
    if backend == "jax" or (backend == "torch" and flag):
        return True
    return "auto" if backend == "torch" else flag


def _export(model, config: DetectionConfig, source, image_size: int) -> dict:
    from lambda_keras.detection.serving import export_detector_keras_file

    files = export_run(
        model,
        config.model_dir,
        export_detector_keras_file,
        image_size,
        source.class_names,
        source.category_ids,
    )
    print(f"Saved {files['keras']} and the serving SavedModel {files['saved_model']}.")
    return files
