"""The training page (docs/training.md): its tables of the scripts' flags are what
``docs/flag_tables.py`` renders from their absl definitions (a new flag, a changed default or
help text fails here until ``python docs/flag_tables.py`` is run), the generator writes cells
that Markdown reads as written, and the page fits the site's content column. Its Python samples
run in ``tests/test_docs.py::test_the_samples_run``."""

import re
from pathlib import Path

import pytest
from absl import flags

from tests.docs_site import docs_module

DOCS = Path(__file__).resolve().parents[1] / "docs"
PAGE = DOCS / "training.md"
# The site's content column at 1280 px holds about 80 characters of code.
CODE_WIDTH = 80
ROW = re.compile(r"^\| `(--\w+)` \| (.*?) \| (.*) \|$")


@pytest.fixture(scope="module")
def flag_tables():
    return docs_module("flag_tables")


def test_the_flag_tables_are_what_the_scripts_define(flag_tables):
    tables = flag_tables.tables()
    assert {"train", "train_maskrcnn", "eval", "eval_maskrcnn", "export"} <= set(tables)
    marked = set()
    for path in sorted(DOCS.glob("*.md")):
        page = path.read_text()
        marked |= {m[2] for m in flag_tables.BLOCK.finditer(page)}
        stale = f"{path.name}: python docs/flag_tables.py"
        assert flag_tables.rendered(page, tables) == page, stale
    assert marked == set(tables)  # every script with flags has its table


def test_every_flag_of_a_script_is_a_row_of_its_table(flag_tables):
    for name in flag_tables.script_names():
        defined = [flag.name for flag in flag_tables.script_flags(name)]
        rows = flag_tables.flags_table(flag_tables.script_flags(name)).splitlines()[2:]
        assert [ROW.match(row)[1] for row in rows] == [f"--{flag}" for flag in defined], name


def test_a_new_flag_makes_the_page_stale(flag_tables, monkeypatch):
    defined = flag_tables.script_flags

    def with_a_new_flag(name):
        extra = flags.FlagValues()
        flags.DEFINE_integer("new_flag", 3, "A new flag.", flag_values=extra)
        return [*defined(name), extra["new_flag"]]

    monkeypatch.setattr(flag_tables, "script_flags", with_a_new_flag)
    page = PAGE.read_text()
    assert flag_tables.rendered(page, flag_tables.tables()) != page


def test_help_texts_are_table_cells_markdown_reads_as_written(flag_tables):
    """``<root>`` is no HTML tag and ``|`` no new column; flags and quoted values are code, an
    enum's values follow its help, a missing default is a dash."""
    fv = flags.FlagValues()
    flags.DEFINE_string(
        "dataset",
        "digits",
        "'digits' or 'folder:<root>' (<root>/<split>/) | TFDS; see --data_dir.",
        flag_values=fv,
    )
    flags.DEFINE_enum("loop", "auto", ["auto", "fit"], "The loop.", flag_values=fv)
    flags.DEFINE_boolean("export", True, "With --backbone=resnet_rs too.", flag_values=fv)
    flags.DEFINE_integer("steps", None, "Steps; default the recipe's.", flag_values=fv)
    rows = flag_tables.flags_table([fv[name] for name in fv]).splitlines()
    assert rows == [
        "| flag | default | help |",
        "|---|---|---|",
        "| `--dataset` | `digits` | `digits` or `folder:<root>` (&lt;root&gt;/&lt;split&gt;/) \\| "
        "TFDS; see `--data_dir`. |",
        "| `--loop` | `auto` | The loop. One of `auto`, `fit`. |",
        "| `--export` | `true` | With `--backbone=resnet_rs` too. |",
        "| `--steps` | — | Steps; default the recipe's. |",
    ]


def test_the_tables_need_no_horizontal_scrolling(flag_tables):
    """Code does not wrap: the flag and default cells leave the help column room, and no code
    span of a help text is wider than that column at 1280 px."""
    for name, table in flag_tables.tables().items():
        for row in table.splitlines()[2:]:
            flag, default, help_text = ROW.match(row).groups()
            assert len(flag) + len(default.strip("`")) <= 48, (name, row)
            spans = re.findall(r"`([^`]*)`", help_text)
            assert max(map(len, spans), default=0) <= 30, (name, row)


def test_the_page_s_code_fits_the_content_column():
    blocks = re.findall(r"```\w*\n(.*?)```", PAGE.read_text(), flags=re.S)
    wide = [line for block in blocks for line in block.splitlines() if len(line) > CODE_WIDTH]
    assert len(blocks) > 5 and wide == []
