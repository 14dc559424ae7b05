"""The tables of the scripts' flags on the training page, rendered from their absl definitions:
every script of ``scripts/`` with a ``define_flags(flag_values)`` gets one table (flag, default,
help) in the order it defines its flags. Pages mark where each table goes::

    <!-- generated: python docs/flag_tables.py train -->
    (written by this script)
    <!-- end generated -->

A new flag, a changed default or help text fails ``tests/test_docs_training.py`` until the pages
are rewritten::

    python docs/flag_tables.py             # rewrite the pages' tables
    python docs/flag_tables.py --check     # exit 1 if a page is not what the flags render
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import flags  # noqa: E402
from marked_blocks import fill_blocks, rewrite_pages  # noqa: E402

DOCS = Path(__file__).resolve().parent
SCRIPTS = DOCS.parent / "scripts"
BLOCK = re.compile(
    r"(<!-- generated: python docs/flag_tables\.py (\w+) -->\n)(.*?)(<!-- end generated -->)",
    re.S,
)
# Shown as code in a help text: a flag ("--tpu", "--backbone=torchvision_resnet") and a quoted
# value ("'digits'", "'folder:<root>'").
AS_CODE = re.compile(r"(?<![\w`-])--\w+(?:=[\w.]+)?|(?<![\w'])'([^'\s]+)'(?!\w)")


def script_names() -> list[str]:
    """The scripts that define flags (``def define_flags`` in ``scripts/<name>.py``)."""
    return sorted(
        path.stem for path in SCRIPTS.glob("*.py") if "\ndef define_flags(" in path.read_text()
    )


def load_script(name: str):
    """``scripts/<name>.py`` as the module ``lambda_keras_scripts.<name>``, its ``__main__``
    block not run (the tests load the scripts with it: ``tests/script_flags.py``); the
    scripts' folder on ``sys.path``, as when a script runs, for the modules beside them
    (``placement_flags``)."""
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


def script_flags(name: str) -> list[flags.Flag]:
    """The flags ``scripts/<name>.py`` defines, in the order it defines them."""
    flag_values = load_script(name).define_flags(flags.FlagValues())
    return [flag_values[flag] for flag in flag_values]


def _default(flag: flags.Flag) -> str:
    if flag.default is None:
        return "—"
    if isinstance(flag.default, bool):
        return f"`{str(flag.default).lower()}`"
    return f"`{flag.default}`" if str(flag.default) else "`''`"


def _help(flag: flags.Flag) -> str:
    text = flag.help
    choices = getattr(flag.parser, "enum_values", None)
    if choices:  # absl puts "<a|b|c>: " before an enum's help
        text = text.removeprefix(f"<{'|'.join(choices)}>: ")
    # Outside code, a help text's "<root>" would be an HTML tag and "|" a new column.
    parts = re.split(r"(`[^`]*`)", AS_CODE.sub(lambda m: f"`{m[1] or m[0]}`", text))
    text = "".join(
        part
        if part.startswith("`")
        else part.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        for part in parts
    ).replace("|", "\\|")
    if choices:
        text += " One of " + ", ".join(f"`{c}`" for c in choices) + "."
    return text


def flags_table(script: list[flags.Flag]) -> str:
    """One row per flag of a script (``script_flags``): the flag, its default (—: none, the
    help says what applies), its help text and, for an enum, its values."""
    lines = ["| flag | default | help |", "|---|---|---|"]
    for flag in script:
        lines.append(f"| `--{flag.name}` | {_default(flag)} | {_help(flag)} |")
    return "\n".join(lines)


def tables() -> dict[str, str]:
    """Each script's table by the name its marker gives (the script's file name)."""
    return {name: flags_table(script_flags(name)) for name in script_names()}


def rendered(page: str, found: dict[str, str]) -> str:
    """``page`` with every marked block holding its table."""
    return fill_blocks(page, BLOCK, found, lambda table: f"{table}\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a page differs")
    args = parser.parse_args()
    found = tables()
    rewrite_pages(lambda page: rendered(page, found), args.check, "python docs/flag_tables.py")


if __name__ == "__main__":
    main()
