"""Where a run's steps execute: a ``tf.distribute`` strategy on TensorFlow, a ``keras.distribution``
on JAX ([`data_parallel`][lambda_keras.training.data_parallel]), picked by name with errors that
name the flag to fix; which process of a run writes its files."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os

import keras
import tensorflow as tf

from lambda_keras import _validation as v
from lambda_keras.training import data_parallel

__all__ = [
    "STRATEGIES",
    "TENSORFLOW_STRATEGIES",
    "TORCH_STRATEGIES",
    "Placement",
    "PlacementConfig",
    "check_placement",
    "check_strategy",
    "is_chief",
    "make_placement",
    "make_strategy",
]

TENSORFLOW_STRATEGIES = ("auto", "tpu", "mirrored", "multi_worker", "one_device")
"""The `--strategy` values on TensorFlow (`tf.distribute`)."""
STRATEGIES = (*TENSORFLOW_STRATEGIES, "data_parallel")
"""Every `--strategy` value: TensorFlow's and `data_parallel` (Keras on JAX); PyTorch runs
`auto` and `one_device`."""
TORCH_STRATEGIES = ("auto", "one_device")
"""The `--strategy` values on PyTorch: one device (Keras' distribution API is JAX's)."""
# What each backend runs, and what to ask for instead of a strategy of another one.
_BACKEND_STRATEGIES = {
    "tensorflow": TENSORFLOW_STRATEGIES,
    "jax": data_parallel.JAX_STRATEGIES,
    "torch": TORCH_STRATEGIES,
}
_INSTEAD = {
    "torch": "on PyTorch a run trains on one device (several devices: --backend=jax or tensorflow)",
    "jax": "on JAX, --strategy=data_parallel (or auto) spreads the batch over every local "
    "device, TPU cores included, and --coordinator_address/--num_processes/--process_id join "
    "several hosts",
    "tensorflow": "on TensorFlow, --strategy=mirrored spreads the batch over local devices",
}


def check_strategy(strategy: str, backend: str) -> None:
    """Raise ``ValueError`` when Keras' ``backend`` cannot run ``strategy``."""
    if backend not in _BACKEND_STRATEGIES:
        raise ValueError(
            f"Training runs with Keras on {' or '.join(_BACKEND_STRATEGIES)}; this process runs "
            f"Keras on {backend!r} (set --backend or KERAS_BACKEND)."
        )
    if strategy not in STRATEGIES:
        raise ValueError(
            f"--strategy must be one of {', '.join(STRATEGIES)}; received {strategy!r}."
        )
    if strategy not in _BACKEND_STRATEGIES[backend]:
        others = [b for b, allowed in _BACKEND_STRATEGIES.items() if strategy in allowed]
        raise ValueError(
            f"--strategy={strategy} needs --backend={' or '.join(others)}; this run is on "
            f"{backend}: {_INSTEAD[backend]}."
        )


@dataclasses.dataclass(frozen=True)
class Placement:
    """Where a run's steps execute, and whether this process writes the run's files.

    ``strategy`` on TensorFlow (its scope holds the variables), ``distribution`` on JAX (its
    scope must hold the variables and every step); the other is None.
    """

    description: str
    replicas: int
    chief: bool
    strategy: tf.distribute.Strategy | None = None
    distribution: keras.distribution.Distribution | None = None

    def variable_scope(self):
        """The scope to build the model and optimizer in."""
        return self.strategy.scope() if self.strategy is not None else self.run_scope()

    def check_batch_size(self, batch_size: int) -> None:
        """Raise ``ValueError`` unless the global ``batch_size`` splits evenly over the
        replicas."""
        if batch_size % self.replicas:
            raise ValueError(
                f"--batch_size={batch_size} does not split evenly over the {self.replicas} "
                f"devices of this run; pass a multiple of {self.replicas}."
            )

    def run_scope(self):
        """The scope to build, train and evaluate in (JAX); nothing on TensorFlow."""
        if self.distribution is None:
            return contextlib.nullcontext()
        return self.distribution.scope()


@dataclasses.dataclass(frozen=True)
class PlacementConfig:
    """Where a run executes, as both training configs embed it (the flags of
    ``scripts/placement_flags.py``); checked when made.

    Attributes:
        strategy: One of [`STRATEGIES`][lambda_keras.training.distribute.STRATEGIES]
            ([`check_strategy`][lambda_keras.training.distribute.check_strategy] says which
            backend runs which).
        tpu: TensorFlow's `TPUStrategy`: the TPU's name, `"local"` on a TPU VM.
        coordinator_address: JAX multi-host: `host:port` of process 0.
        num_processes: JAX multi-host: the number of hosts.
        process_id: JAX multi-host: this host's index.

    Examples:
        >>> PlacementConfig(strategy="one_device").strategy
        'one_device'
    """

    strategy: str = "auto"
    tpu: str | None = None
    coordinator_address: str | None = None
    num_processes: int | None = None
    process_id: int | None = None

    CHECKS = {
        "strategy": lambda name, value: v.one_of(name, value, STRATEGIES),
        "num_processes": v.optional(v.positive_int),
        "process_id": v.optional(v.non_negative_int),
    }
    """Each field's check (`_validation`'s), run when a config is made and as the flag's
    validator."""

    def __post_init__(self):
        v.check_fields(self, self.CHECKS)

    def make(self) -> Placement:
        """[`make_placement`][lambda_keras.training.distribute.make_placement] of these settings;
        call before any other op."""
        return make_placement(
            self.strategy,
            self.tpu,
            self.coordinator_address,
            self.num_processes,
            self.process_id,
        )


def check_placement(name: str, value) -> PlacementConfig:
    """A config's ``placement`` must be a
    [`PlacementConfig`][lambda_keras.training.distribute.PlacementConfig] (a check of
    ``_validation``'s form, for the configs' ``CHECKS``)."""
    if not isinstance(value, PlacementConfig):
        raise TypeError(f"`{name}` must be a PlacementConfig; received {type(value).__name__}.")
    return value


def make_placement(
    strategy: str = "auto",
    tpu: str | None = None,
    coordinator_address: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
) -> Placement:
    """The strategy (TensorFlow) or distribution (JAX) of a run, or one device (PyTorch); call
    before any other op.

    The multi-host arguments are JAX's
    ([`initialize_hosts`][lambda_keras.training.data_parallel.initialize_hosts]); TensorFlow's
    multi-worker runs read ``TF_CONFIG``.
    """
    backend = keras.backend.backend()
    check_strategy(strategy, backend)
    if backend == "jax":
        data_parallel.initialize_hosts(coordinator_address, num_processes, process_id)
        distribution = data_parallel.make_distribution(strategy)
        replicas = 1 if distribution is None else distribution.device_mesh.devices.size
        return Placement(
            description=data_parallel.describe(distribution),
            replicas=replicas,
            chief=data_parallel.process_index() == 0,
            distribution=distribution,
        )
    if coordinator_address is not None:
        raise ValueError(
            "--coordinator_address/--num_processes/--process_id join hosts on JAX; on "
            "TensorFlow --strategy=multi_worker reads the cluster from TF_CONFIG."
        )
    if backend == "torch":
        return Placement(
            description="distribution: none (Keras on PyTorch, one device)",
            replicas=1,
            chief=True,
        )
    made = make_strategy(strategy, tpu)
    return Placement(
        description=f"distribution: {type(made).__name__} over "
        f"{made.num_replicas_in_sync} replica(s)",
        replicas=made.num_replicas_in_sync,
        chief=is_chief(made),
        strategy=made,
    )


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
    if strategy not in TENSORFLOW_STRATEGIES:
        raise ValueError(
            f"--strategy must be one of {', '.join(TENSORFLOW_STRATEGIES)} on TensorFlow; "
            f"received {strategy!r}."
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
