"""The command-line scripts (``scripts/``) in process: a script loaded as a module without
running it, and its flags parsed through its ``define_flags`` on a fresh ``FlagValues`` (absl's
parse errors are the scripts' one-line "FATAL Flags parsing error")."""

import importlib.util
import re
import sys
from pathlib import Path

import pytest
from absl import flags

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def load_script(name: str):
    """``scripts/<name>.py`` as the module ``lambda_keras_scripts.<name>``, its ``__main__``
    block not run. The scripts' folder goes on ``sys.path``, as when a script runs, for the
    modules beside them (``placement_flags``)."""
    module_name = f"lambda_keras_scripts.{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    if str(SCRIPTS) not in sys.path:
        sys.path.insert(0, str(SCRIPTS))
    spec = importlib.util.spec_from_file_location(module_name, SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


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
