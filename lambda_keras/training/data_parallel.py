"""Data parallelism on JAX through ``keras.distribution``: the path to TPUs that works today.

TensorFlow's TPU builds end at 2.19 and Keras' own TPU CI runs the JAX backend only, so a run on
a TPU VM (or on several GPUs) trains with Keras on JAX: ``keras.distribution.DataParallel``
replicates the variables on every device and splits each global batch along its first axis.
The step is one XLA program over all devices (GSPMD), so batch-norm statistics are computed over
the global batch, as ``--sync_batch_norm`` asks for on TensorFlow. Several hosts (a TPU pod
slice) join through ``keras.distribution.initialize`` before anything else runs; each host then
reads its own shard of the ``tf.data`` input (``auto_shard_dataset``).
"""

from __future__ import annotations

import keras

__all__ = [
    "JAX_STRATEGIES",
    "describe",
    "initialize_hosts",
    "make_distribution",
    "process_index",
]

# "auto": DataParallel when more than one device is present; "one_device": no distribution.
JAX_STRATEGIES = ("auto", "data_parallel", "one_device")
"""The `--strategy` values on JAX: `data_parallel` shards the batch over every local device,
`auto` does so when there is more than one, `one_device` does not."""


def initialize_hosts(
    coordinator_address: str | None, num_processes: int | None, process_id: int | None
) -> None:
    """Join a multi-host run (``jax.distributed`` through ``keras.distribution.initialize``).

    Nothing to do when all three are None (one host, or a TPU VM slice whose hosts JAX finds
    itself). Call before anything else runs on JAX.

    Raises:
        ValueError: some but not all of the three are given, or a process id out of range.
    """
    given = {
        "coordinator_address": coordinator_address,
        "num_processes": num_processes,
        "process_id": process_id,
    }
    if all(value is None for value in given.values()):
        return
    missing = [f"--{name}" for name, value in given.items() if value is None]
    if missing:
        raise ValueError(
            "A multi-host run needs --coordinator_address, --num_processes and --process_id "
            f"together; missing {', '.join(missing)}."
        )
    if not 0 <= process_id < num_processes:
        raise ValueError(
            f"--process_id must be in [0, --num_processes={num_processes}); received "
            f"process_id={process_id}."
        )
    keras.distribution.initialize(
        job_addresses=coordinator_address, num_processes=num_processes, process_id=process_id
    )


def make_distribution(strategy: str = "auto") -> keras.distribution.DataParallel | None:
    """``DataParallel`` over every device of every host, or None for one device.

    Args:
        strategy: ``"auto"`` (``DataParallel`` when more than one device is present),
            ``"data_parallel"`` (always) or ``"one_device"`` (no distribution).
    """
    if strategy not in JAX_STRATEGIES:
        raise ValueError(
            f"--strategy must be one of {', '.join(JAX_STRATEGIES)} on JAX; received {strategy!r}."
        )
    devices = keras.distribution.list_devices()
    if strategy == "one_device" or (strategy == "auto" and len(devices) == 1):
        return None
    return keras.distribution.DataParallel(devices=devices)


def describe(distribution: keras.distribution.DataParallel | None) -> str:
    """One line naming the distribution, the devices and the hosts."""
    import jax

    platform = jax.devices()[0].platform
    if distribution is None:
        return f"distribution: none (one {platform} device)"
    devices = distribution.device_mesh.devices.size
    return (
        f"distribution: keras.distribution.DataParallel over {devices} {platform} device(s) "
        f"in {jax.process_count()} process(es)"
    )


def process_index() -> int:
    """This host's index in a multi-host run (0: the one that writes the files)."""
    import jax

    return jax.process_index()
