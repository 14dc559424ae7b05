"""A script's flags parsed in process: its ``define_flags`` on a fresh ``FlagValues`` (absl's
parse errors are the scripts' one-line "FATAL Flags parsing error")."""

import re

import pytest
from absl import flags


def parse(script, *argv: str) -> flags.FlagValues:
    """The script module's flags parsed from ``argv``."""
    flag_values = script.define_flags(flags.FlagValues())
    flag_values([script.__name__, *argv])
    return flag_values


def assert_refused(script, flag: str, message: str) -> None:
    """``flag`` is refused with ``message`` in the error."""
    with pytest.raises(flags.IllegalFlagValueError, match=re.escape(message)):
        parse(script, flag)


def case_ids(cases) -> list[str]:
    """Test ids of ``(script module, flag, message)`` cases: ``train_maskrcnn--depth=51``."""
    return [f"{script.__name__.rpartition('.')[2]}{flag}" for script, flag, _ in cases]
