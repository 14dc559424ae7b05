"""The command line every checkpoint converter shares (``convert_timm``,
``convert_torchvision``): ``--model``, ``--checkpoint``, ``--output``, all required; a refused
checkpoint is one line naming the problem, and nothing is written."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

__all__ = ["define_flags", "run"]


def define_flags(flag_values, models: Sequence[str], model_help: str, checkpoint_help: str):
    """The converter's flags on ``flag_values`` (absl's global ``FLAGS`` when None)."""
    from absl import flags

    flag_values = flags.FLAGS if flag_values is None else flag_values
    flags.DEFINE_enum("model", None, list(models), model_help, flag_values=flag_values)
    flags.DEFINE_string("checkpoint", None, checkpoint_help, flag_values=flag_values)
    flags.DEFINE_string(
        "output", None, "Keras weights file to write (.weights.h5).", flag_values=flag_values
    )
    flags.mark_flags_as_required(["model", "checkpoint", "output"], flag_values=flag_values)
    return flag_values


def run(convert: Callable[[str, str, str], str], program: str) -> None:
    """``convert(model, checkpoint, output)`` on the parsed flags; exits with one line on a
    ``ValueError`` or ``ImportError``."""
    from absl import flags

    values = flags.FLAGS
    try:
        path = convert(values.model, values.checkpoint, values.output)
    except (ValueError, ImportError) as err:
        sys.exit(f"{program}: {err} Nothing was written.")
    print(f"Wrote {path}")
