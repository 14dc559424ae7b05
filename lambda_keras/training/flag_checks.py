"""The library's argument checks as absl flag validators, so a script's flag is refused with the
library's own rule and words (``--name`` in place of the argument's name), once."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping

from absl import flags

from lambda_keras._validation import Check

__all__ = ["register_check", "register_checks"]


def register_check(
    name: str,
    check: Callable[[object], object],
    flag_values: flags.FlagValues = flags.FLAGS,
    allow_none: bool = False,
) -> None:
    """Validate ``--name`` with ``check(value)``, a library check that raises ``ValueError`` or
    ``TypeError`` naming the argument (the private ``lambda_keras._validation`` checks and
    their kin).

    Args:
        name: The flag, also the argument name the check's message uses.
        check: Called with the flag's value.
        flag_values: Where the flag is defined.
        allow_none: An unset flag (``None``: "the default of the run") is not checked.
    """

    def validate(value) -> bool:
        if allow_none and value is None:
            return True
        try:
            check(value)
        except (TypeError, ValueError) as err:
            message = str(err).replace(f"`{name}`", f"--{name}")
            raise flags.ValidationError(message.replace(f" {name}=", f" --{name}=")) from None
        return True

    flags.register_validator(name, validate, flag_values=flag_values)


def register_checks(
    checks: Mapping[str, Check], flag_values: flags.FlagValues = flags.FLAGS
) -> None:
    """[`register_check`][lambda_keras.training.flag_checks.register_check] of each
    ``check(name, value)`` of a config's ``CHECKS``, for the flags of the same names that
    ``flag_values`` defines: the script refuses a value with the words the config would."""
    for name, check in checks.items():
        if name in flag_values:
            register_check(name, functools.partial(check, name), flag_values)
