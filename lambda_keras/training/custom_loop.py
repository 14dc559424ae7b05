"""A training loop over ``strategy.run`` for the strategies Keras 3's ``model.fit`` cannot drive.

Keras 3's ``fit`` (and ``evaluate``) fail under ``MultiWorkerMirroredStrategy``: before the
first step they ``strategy.reduce`` a whole input batch, a nested structure that the collective
all-reduce cannot convert ("Attempt to convert a value (PerReplica)", keras-team/keras#20585).
[`fit_with_strategy_run`][lambda_keras.training.custom_loop.fit_with_strategy_run] does what ``fit``
does for the trainer, with the model's compiled loss and optimizer and the same arithmetic:

* the per-replica loss is the compiled loss (mean over the replica's batch) plus the model's
  regularisation losses, both divided by the number of replicas (the gradients are summed
  across replicas, as in Keras), and scaled by the ``LossScaleOptimizer`` that ``compile``
  wraps around the optimizer under ``mixed_float16``;
* the weight EMA of the optimizer is copied into the model at the end (as ``fit`` does);
* batch-norm moving statistics, per replica unless ``synchronized``, are averaged across the
  replicas at the end of every epoch, so that all workers hold the same model;
* one input pipeline per worker (``distribute_datasets_from_function``, see
  [`lambda_keras.training.classification.data.make_dataset`][lambda_keras.training.classification.data.make_dataset]'s
  ``input_context``);
* fault tolerance: a ``tf.train.CheckpointManager`` checkpoint of the model, the optimizer and
  the epoch at the end of every epoch; a run started again with the same ``model_dir`` resumes
  after the last finished epoch. Every worker restores the chief's checkpoint (``model_dir``
  must be shared by the workers, as for ``BackupAndRestore``) and saves one (the variables are
  synchronised), the others to scratch directories deleted at the end;
* per-epoch progress lines, ``checkpoint.keras`` (the latest epoch's model, as
  ``keras.callbacks.ModelCheckpoint`` writes it), ``log.csv`` (the columns of
  ``keras.callbacks.CSVLogger``) and TensorBoard scalars (``epoch_loss``, ...,
  ``epoch_learning_rate``) from the chief.
"""

from __future__ import annotations

import csv
import os
import shutil
import time
from collections.abc import Callable

import keras
import numpy as np
import tensorflow as tf

from lambda_keras.training import resume
from lambda_keras.training.distribute import is_chief

__all__ = ["fit_with_strategy_run", "is_chief"]


def fit_with_strategy_run(
    model: keras.Model,
    strategy: tf.distribute.Strategy,
    dataset_fn: Callable[[tf.distribute.InputContext], tf.data.Dataset],
    *,
    epochs: int,
    steps_per_epoch: int,
    model_dir: str,
    verbose: int = 2,
) -> dict[str, list[float]]:
    """Train a compiled ``model`` (built under ``strategy.scope()``) for ``epochs``.

    Args:
        model: compiled with a one-output loss (``model.loss``) and an optimizer.
        strategy: the strategy whose scope holds the model's variables.
        dataset_fn: ``input_context -> tf.data.Dataset`` of per-replica batches
            ``(images [b, h, w, c], one-hot labels [b, classes])``, repeated.
        epochs: The run's length in epochs; on restart it continues to the same end.
        steps_per_epoch: Steps in each epoch.
        model_dir: ``backup/`` checkpoints, ``checkpoint.keras``, ``log.csv`` and
            ``tensorboard/train``.
        verbose: 0 silent, otherwise one line per epoch.

    Returns:
        The history of this invocation: ``{"loss": [...], "top1": [...], "top5": [...]}``.
    """
    if not isinstance(model.loss, keras.losses.Loss):
        raise TypeError(
            "fit_with_strategy_run needs a model compiled with one keras.losses.Loss; received "
            f"loss={model.loss!r}."
        )
    chief = is_chief(strategy)
    steps = _ReplicatedSteps(model, strategy)
    backup = _EpochCheckpoint(model, strategy, model_dir, chief)
    if backup.resumed_from and verbose:
        print(f"resumed from {backup.resumed_from} after epoch {backup.epoch}")
    iterator = iter(strategy.distribute_datasets_from_function(dataset_fn))
    writer = None
    if chief:
        writer = tf.summary.create_file_writer(os.path.join(model_dir, "tensorboard", "train"))
    history = {"loss": [], "top1": [], "top5": []}
    for current in range(backup.epoch, epochs):
        start = time.perf_counter()
        logs = steps.run_epoch(iterator, steps_per_epoch)
        backup.save(current + 1)
        if chief:
            learning_rate = float(keras.ops.convert_to_numpy(model.optimizer.learning_rate))
            _log_epoch(model_dir, writer, current, logs, learning_rate)
            model.save(os.path.join(model_dir, "checkpoint.keras"))  # for eval.py mid-run
        for key in history:
            history[key].append(logs[key])
        if verbose:
            print(
                f"Epoch {current + 1}/{epochs} - {time.perf_counter() - start:.0f}s - "
                + " - ".join(f"{k}: {v:.4f}" for k, v in logs.items())
            )
    model.optimizer.finalize_variable_values(model.trainable_variables)
    backup.remove_scratch()
    return history


class _ReplicatedSteps:
    """The training step of ``model`` under ``strategy.run``, and the end-of-epoch averaging of
    the per-replica batch-norm statistics."""

    def __init__(self, model: keras.Model, strategy: tf.distribute.Strategy):
        self.model = model
        self.strategy = strategy
        self.replicas = strategy.num_replicas_in_sync
        # Per-example losses, averaged over the global batch here (Keras' reducing losses
        # would already divide by the number of replicas).
        self.per_example_loss = model.loss.__class__.from_config(
            {**model.loss.get_config(), "reduction": "none"}
        )
        # Batch-norm statistics are per replica (unless synchronised); averaged across
        # replicas at the end of every epoch, so that every worker evaluates, saves and
        # exports the same model.
        self.moving = [
            v
            for v in model.non_trainable_variables
            if v.path.endswith(("moving_mean", "moving_variance")) and "float" in str(v.dtype)
        ]
        self.train_step = tf.function(self._train_step)
        self.average_moving_statistics = tf.function(self._average_moving_statistics)

    def run_epoch(self, iterator, steps: int) -> dict[str, float]:
        """``steps`` training steps; returns the epoch's mean ``loss``, ``top1``, ``top5``."""
        totals = dict.fromkeys(("loss", "top1", "top5", "count"), 0.0)
        for _ in range(steps):
            for key, value in self.train_step(iterator).items():
                totals[key] += float(value)
        if self.replicas > 1 and self.moving:
            self.average_moving_statistics()
        return {k: totals[k] / totals["count"] for k in ("loss", "top1", "top5")}

    def _train_step(self, iterator):
        sums = self.strategy.run(self._replica_step, args=next(iterator))
        return {k: self.strategy.reduce("SUM", v, axis=None) for k, v in sums.items()}

    def _replica_step(self, images, labels):
        model, optimizer = self.model, self.model.optimizer
        with tf.GradientTape() as tape:
            predictions = model(images, training=True)
            losses = self.per_example_loss(labels, predictions)
            count = tf.cast(tf.shape(labels)[0], losses.dtype)
            regularization = tf.add_n(model.losses) if model.losses else 0.0
            regularization = tf.cast(regularization, losses.dtype)
            loss = (tf.reduce_sum(losses) / count + regularization) / self.replicas
            scaled = optimizer.scale_loss(loss)
        gradients = tape.gradient(scaled, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables, strict=True))
        return _batch_sums(labels, predictions, losses, regularization, count)

    def _average_moving_statistics(self):
        def replica_fn():
            context = tf.distribute.get_replica_context()
            for variable in self.moving:
                local = tf.identity(variable.value)  # this replica's copy
                variable.assign(context.all_reduce("MEAN", local))

        self.strategy.run(replica_fn)


def _batch_sums(labels, predictions, losses, regularization, count) -> dict[str, tf.Tensor]:
    """Sums over a replica's batch: the loss as ``fit`` reports it (the compiled loss plus
    regularisation), the top-1 and top-5 hits, and the number of examples."""
    true = tf.argmax(labels, axis=-1, output_type=tf.int32)
    predictions = tf.cast(predictions, tf.float32)
    sums = {"loss": tf.reduce_sum(losses) + regularization * count, "count": count}
    sums = {key: tf.cast(value, tf.float32) for key, value in sums.items()}
    hits = {
        f"top{k}": tf.reduce_sum(tf.cast(tf.math.in_top_k(true, predictions, k), tf.float32))
        for k in (1, 5)
    }
    return {**sums, **hits}


class _EpochCheckpoint:
    """The run's ``tf.train`` checkpoint of the model, its optimizer and the epoch.

    Every worker restores the chief's (under ``model_dir/backup``) and saves its own: the chief
    there, the others to scratch directories removed at the end.
    """

    def __init__(self, model, strategy, model_dir: str, chief: bool):
        backup_dir = os.path.join(model_dir, resume.BACKUP_DIR)
        self.write_dir = backup_dir
        if not chief:
            self.write_dir = os.path.join(backup_dir, f"worker-{strategy.cluster_resolver.task_id}")
        self.chief = chief
        with strategy.scope():
            model.optimizer.build(model.trainable_variables)
            self._epoch = tf.Variable(0, dtype=tf.int64, trainable=False, name="epoch")
            self.checkpoint = tf.train.Checkpoint(
                model=model, optimizer=model.optimizer, epoch=self._epoch
            )
        self.manager = tf.train.CheckpointManager(self.checkpoint, self.write_dir, max_to_keep=1)
        self.resumed_from = tf.train.latest_checkpoint(backup_dir)  # the chief's, for all
        if self.resumed_from:
            self.checkpoint.restore(self.resumed_from).assert_existing_objects_matched()

    @property
    def epoch(self) -> int:
        """Epochs finished (0 on a fresh run)."""
        return int(self._epoch.numpy())

    def save(self, epochs_done: int) -> None:
        self._epoch.assign(epochs_done)
        self.manager.save(checkpoint_number=epochs_done)

    def remove_scratch(self) -> None:
        if not self.chief:
            shutil.rmtree(self.write_dir, ignore_errors=True)


def _log_epoch(model_dir, writer, epoch: int, logs: dict[str, float], learning_rate) -> None:
    """One ``log.csv`` row (``CSVLogger``'s columns) and TensorBoard's ``epoch_*`` scalars."""
    path = os.path.join(model_dir, "log.csv")
    new = not os.path.exists(path)
    with open(path, "a", newline="") as f:
        out = csv.writer(f)
        keys = sorted(logs)
        if new:
            out.writerow(["epoch", *keys])
        out.writerow([epoch, *(np.format_float_positional(logs[k]) for k in keys)])
    with writer.as_default(step=epoch):
        for key, value in {**logs, "learning_rate": learning_rate}.items():
            tf.summary.scalar(f"epoch_{key}", value)
    writer.flush()
