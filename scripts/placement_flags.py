"""Where a training script's run executes: ``--backend`` (read from the command line before
Keras is imported: Keras reads ``KERAS_BACKEND`` once, on import, and nothing here imports it
at module level), ``--strategy``, ``--tpu`` and JAX's multi-host flags."""

from __future__ import annotations

import os
import sys

__all__ = [
    "BACKENDS",
    "backend_from_argv",
    "check_imported_backend",
    "config_from_flags",
    "define_placement_flags",
    "set_backend_from_argv",
]

BACKENDS = ("tensorflow", "jax", "torch")


def backend_from_argv(argv: list[str], environ: dict) -> str | None:
    """The backend ``--backend`` in ``argv`` asks for, checked against ``KERAS_BACKEND``.

    Runs before Keras is imported (Keras reads ``KERAS_BACKEND`` once, on import). Returns the
    flag's value, or None without the flag (``KERAS_BACKEND``, else Keras' default, applies).

    Raises:
        SystemExit: the flag contradicts ``KERAS_BACKEND``, or names no training backend.
    """
    value = None
    for index, arg in enumerate(argv):
        if arg.startswith("--backend="):
            value = arg.split("=", 1)[1]
        elif arg == "--backend" and index + 1 < len(argv):
            value = argv[index + 1]
    if value is None:
        return None
    if value not in BACKENDS:
        raise SystemExit(f"--backend must be one of {', '.join(BACKENDS)}; received {value!r}.")
    already = environ.get("KERAS_BACKEND")
    if already and already != value:
        raise SystemExit(
            f"--backend={value} contradicts KERAS_BACKEND={already} in the environment; pass "
            "one of them (or the same backend in both)."
        )
    return value


def set_backend_from_argv() -> None:
    """``KERAS_BACKEND`` from the command line's ``--backend`` (a script's first step)."""
    backend = backend_from_argv(sys.argv[1:], os.environ)
    if backend:
        os.environ["KERAS_BACKEND"] = backend


def define_placement_flags(flag_values) -> None:
    """``--backend``, ``--strategy``, ``--tpu`` and the JAX multi-host flags on
    ``flag_values`` (absl), checked by
    [`PlacementConfig`][lambda_keras.training.distribute.PlacementConfig]'s rules; call after
    ``KERAS_BACKEND`` is set."""
    from absl import flags

    from lambda_keras.training.distribute import STRATEGIES, PlacementConfig
    from lambda_keras.training.flag_checks import register_checks

    default_strategy = PlacementConfig().strategy

    flags.DEFINE_enum(
        "backend",
        None,
        list(BACKENDS),
        "Keras backend, set before Keras is imported (default: KERAS_BACKEND, else tensorflow).",
        flag_values=flag_values,
    )
    flags.DEFINE_enum(
        "strategy",
        default_strategy,
        list(STRATEGIES),
        "auto: all local devices (JAX: data_parallel with more than one device; TensorFlow: "
        "a TPU with --tpu, mirrored with several GPUs; PyTorch: one device). JAX: "
        "data_parallel, one_device. TensorFlow: tpu, mirrored, multi_worker (TF_CONFIG), "
        "one_device. PyTorch: one_device.",
        flag_values=flag_values,
    )
    flags.DEFINE_string(
        "tpu",
        None,
        "TensorFlow TPUStrategy (legacy, TensorFlow <= 2.19 TPU VMs): TPU name, 'local' on a "
        "TPU VM. On JAX the TPU cores are local devices: no flag needed.",
        flag_values=flag_values,
    )
    flags.DEFINE_string(
        "coordinator_address",
        None,
        "JAX multi-host: host:port of process 0 (with --num_processes, --process_id).",
        flag_values=flag_values,
    )
    flags.DEFINE_integer(
        "num_processes", None, "JAX multi-host: number of hosts.", flag_values=flag_values
    )
    flags.DEFINE_integer(
        "process_id", None, "JAX multi-host: this host's index.", flag_values=flag_values
    )
    register_checks(PlacementConfig.CHECKS, flag_values)


def config_from_flags(config_class, flag_values, **given):
    """``config_class`` (a frozen training config embedding a ``placement``) from the parsed
    flags of the same names; ``given`` fields are taken as they are."""
    import dataclasses

    from lambda_keras.training.distribute import PlacementConfig

    def from_flags(cls, skip=()):
        names = [f.name for f in dataclasses.fields(cls) if f.name not in skip]
        return {name: getattr(flag_values, name) for name in names if name in flag_values}

    placement = PlacementConfig(**from_flags(PlacementConfig))
    fields = from_flags(config_class, skip={"placement", *given})
    return config_class(**fields, placement=placement, **given)


def check_imported_backend(backend: str | None) -> None:
    """Exit with status 2 when Keras was imported on another backend than ``--backend`` asks
    for (something imported it before the script could set it)."""
    import keras

    if backend and keras.backend.backend() != backend:
        print(
            f"error: --backend={backend}, but Keras was already imported on "
            f"{keras.backend.backend()!r}.",
            file=sys.stderr,
        )
        sys.exit(2)
