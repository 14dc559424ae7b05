"""A training loop over ``strategy.run`` for the strategies Keras 3's ``model.fit`` cannot drive.

Keras 3's ``fit`` (and ``evaluate``) fail under ``MultiWorkerMirroredStrategy``: before the
first step they ``strategy.reduce`` a whole input batch, a nested structure that the collective
all-reduce cannot convert ("Attempt to convert a value (PerReplica)", keras-team/keras#20585).
:func:`fit_with_strategy_run` does what ``fit`` does for the trainer, with the model's compiled
loss and optimizer and the same arithmetic:

* the per-replica loss is the compiled loss (mean over the replica's batch) plus the model's
  regularisation losses, both divided by the number of replicas (the gradients are summed
  across replicas, as in Keras), and scaled by the ``LossScaleOptimizer`` that ``compile``
  wraps around the optimizer under ``mixed_float16``;
* the weight EMA of the optimizer is copied into the model at the end (as ``fit`` does);
* batch-norm moving statistics, per replica unless ``synchronized``, are averaged across the
  replicas at the end of every epoch, so that all workers hold the same model;
* one input pipeline per worker (``distribute_datasets_from_function``, see
  :func:`lambda_keras.training.data.make_dataset`'s ``input_context``);
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

__all__ = ["fit_with_strategy_run", "is_chief"]


def is_chief(strategy: tf.distribute.Strategy) -> bool:
    """Whether this process writes the run's files (the only process, or worker 0 / chief)."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not resolver.task_type:
        return True
    if resolver.task_type == "chief":
        return True
    has_chief = "chief" in resolver.cluster_spec().as_dict()
    return resolver.task_type == "worker" and resolver.task_id == 0 and not has_chief


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
        epochs, steps_per_epoch: the run's length; on restart it continues to the same end.
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
    optimizer = model.optimizer
    chief = is_chief(strategy)
    backup_dir = os.path.join(model_dir, "backup")
    write_dir = backup_dir
    if not chief:
        write_dir = os.path.join(backup_dir, f"worker-{strategy.cluster_resolver.task_id}")
    with strategy.scope():
        optimizer.build(model.trainable_variables)
        epoch = tf.Variable(0, dtype=tf.int64, trainable=False, name="epoch")
        checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer, epoch=epoch)
    manager = tf.train.CheckpointManager(checkpoint, write_dir, max_to_keep=1)
    latest = tf.train.latest_checkpoint(backup_dir)  # the chief's, for every worker
    if latest:
        checkpoint.restore(latest).assert_existing_objects_matched()
        if verbose:
            print(f"resumed from {latest} after epoch {int(epoch.numpy())}")
    replicas = strategy.num_replicas_in_sync
    # Per-example losses, averaged over the global batch here (Keras' reducing losses would
    # already divide by the number of replicas).
    per_example_loss = model.loss.__class__.from_config(
        {**model.loss.get_config(), "reduction": "none"}
    )

    def replica_step(images, labels):
        with tf.GradientTape() as tape:
            predictions = model(images, training=True)
            losses = per_example_loss(labels, predictions)
            count = tf.cast(tf.shape(labels)[0], losses.dtype)
            regularization = tf.add_n(model.losses) if model.losses else 0.0
            regularization = tf.cast(regularization, losses.dtype)
            loss = (tf.reduce_sum(losses) / count + regularization) / replicas
            scaled = optimizer.scale_loss(loss)
        gradients = tape.gradient(scaled, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables, strict=True))
        true = tf.argmax(labels, axis=-1, output_type=tf.int32)
        predictions = tf.cast(predictions, tf.float32)
        sums = {"loss": tf.reduce_sum(losses) + regularization * count, "count": count}
        sums = {key: tf.cast(value, tf.float32) for key, value in sums.items()}
        return {
            **sums,  # "loss" as fit reports it: the compiled loss plus regularisation
            "top1": tf.reduce_sum(tf.cast(tf.math.in_top_k(true, predictions, 1), tf.float32)),
            "top5": tf.reduce_sum(tf.cast(tf.math.in_top_k(true, predictions, 5), tf.float32)),
        }

    # Batch-norm statistics are per replica (unless synchronised); averaged across replicas at
    # the end of every epoch, so that every worker evaluates, saves and exports the same model.
    moving = [
        v for v in model.non_trainable_variables
        if v.path.endswith(("moving_mean", "moving_variance")) and "float" in str(v.dtype)
    ]  # fmt: skip

    @tf.function
    def average_moving_statistics():
        def replica_fn():
            context = tf.distribute.get_replica_context()
            for variable in moving:
                local = tf.identity(variable.value)  # this replica's copy
                variable.assign(context.all_reduce("MEAN", local))

        strategy.run(replica_fn)

    @tf.function
    def train_step(iterator):
        sums = strategy.run(replica_step, args=next(iterator))
        return {k: strategy.reduce("SUM", v, axis=None) for k, v in sums.items()}

    dataset = strategy.distribute_datasets_from_function(dataset_fn)
    iterator = iter(dataset)
    writer = None
    if chief:
        writer = tf.summary.create_file_writer(os.path.join(model_dir, "tensorboard", "train"))
    history = {"loss": [], "top1": [], "top5": []}
    for current in range(int(epoch.numpy()), epochs):
        start = time.perf_counter()
        totals = dict.fromkeys(("loss", "top1", "top5", "count"), 0.0)
        for _ in range(steps_per_epoch):
            for key, value in train_step(iterator).items():
                totals[key] += float(value)
        logs = {k: totals[k] / totals["count"] for k in ("loss", "top1", "top5")}
        if replicas > 1 and moving:
            average_moving_statistics()
        epoch.assign(current + 1)
        manager.save(checkpoint_number=current + 1)
        if chief:
            learning_rate = float(keras.ops.convert_to_numpy(optimizer.learning_rate))
            _log_epoch(model_dir, writer, current, logs, learning_rate)
            model.save(os.path.join(model_dir, "checkpoint.keras"))  # for eval.py mid-run
        for key in history:
            history[key].append(logs[key])
        if verbose:
            print(
                f"Epoch {current + 1}/{epochs} - {time.perf_counter() - start:.0f}s - "
                + " - ".join(f"{k}: {v:.4f}" for k, v in logs.items())
            )
    optimizer.finalize_variable_values(model.trainable_variables)
    if not chief:
        shutil.rmtree(write_dir, ignore_errors=True)
    return history


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
