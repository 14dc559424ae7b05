"""Pick a ``tf.distribute`` strategy by name, with errors that name the flag to fix; which
process of a run writes its files."""

from __future__ import annotations

import json
import os

import tensorflow as tf

__all__ = ["STRATEGIES", "is_chief", "make_strategy"]

STRATEGIES = ("auto", "tpu", "mirrored", "multi_worker", "one_device")


def make_strategy(strategy: str = "auto", tpu: str | None = None) -> tf.distribute.Strategy:
    """A distribution strategy for Keras ``model.fit``.

    Args:
        strategy: ``"auto"`` (a TPU when ``tpu`` is given, ``MirroredStrategy`` with more than
            one GPU, else the default strategy), ``"tpu"`` (``TPUStrategy`` through
            ``TPUClusterResolver(tpu)``), ``"mirrored"``, ``"multi_worker"``
            (``MultiWorkerMirroredStrategy``, cluster from ``TF_CONFIG``) or ``"one_device"``.
        tpu: TPU name or address for ``TPUClusterResolver`` (``"local"`` on a TPU VM).

    Raises:
        ValueError: unknown strategy, no TPU reachable, no ``TF_CONFIG`` for multi-worker.
    """
    if strategy not in STRATEGIES:
        raise ValueError(
            f"--strategy must be one of {', '.join(STRATEGIES)}; received {strategy!r}."
        )
    if strategy == "auto":
        if tpu:
            return _tpu_strategy(tpu)
        if len(tf.config.list_logical_devices("GPU")) > 1:
            return tf.distribute.MirroredStrategy()
        return tf.distribute.get_strategy()
    if strategy == "tpu":
        return _tpu_strategy(tpu)
    if strategy == "mirrored":
        return tf.distribute.MirroredStrategy()
    if strategy == "multi_worker":
        config = os.environ.get("TF_CONFIG")
        if not config:
            raise ValueError(
                "--strategy=multi_worker reads the cluster from the TF_CONFIG environment "
                "variable, which is not set."
            )
        try:
            json.loads(config)
        except json.JSONDecodeError as err:
            raise ValueError(f"TF_CONFIG is not valid JSON: {err}") from err
        return tf.distribute.MultiWorkerMirroredStrategy()
    gpus = tf.config.list_logical_devices("GPU")
    return tf.distribute.OneDeviceStrategy(gpus[0].name if gpus else "/cpu:0")


def _tpu_strategy(tpu: str | None) -> tf.distribute.Strategy:
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu)
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
    except (ValueError, tf.errors.NotFoundError, tf.errors.InvalidArgumentError) as err:
        raise ValueError(
            f"No TPU could be reached with --tpu={tpu!r} (--strategy=tpu): {err}. On a TPU VM "
            "pass --tpu=local; otherwise the TPU's name."
        ) from err
    return tf.distribute.TPUStrategy(resolver)


def is_chief(strategy: tf.distribute.Strategy) -> bool:
    """Whether this process writes the run's files (the only process, or worker 0 / chief)."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not resolver.task_type:
        return True
    if resolver.task_type == "chief":
        return True
    has_chief = "chief" in resolver.cluster_spec().as_dict()
    return resolver.task_type == "worker" and resolver.task_id == 0 and not has_chief
