"""The command-line scripts (``scripts/``) in process: a script loaded as a module without
running it, and its flags parsed through its ``define_flags`` on a fresh ``FlagValues`` (absl's
parse errors are the scripts' one-line "FATAL Flags parsing error")."""

import re

import pytest
from absl import flags

from tests.docs_site import docs_module

# ``scripts/<name>.py`` as the module ``lambda_keras_scripts.<name>``, its ``__main__`` block
# not run: the docs' flag tables load the scripts the same way, with this function.
load_script = docs_module("flag_tables").load_script


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
