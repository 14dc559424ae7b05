"""The library's argument checks as absl flag validators, so a script's flag is refused with the
library's own rule and words (``--name`` in place of the argument's name), once."""

from __future__ import annotations

from collections.abc import Callable

from absl import flags

__all__ = ["register_check"]


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
            raise flags.ValidationError(str(err).replace(f"`{name}`", f"--{name}")) from None
        return True

    flags.register_validator(name, validate, flag_values=flag_values)
