"""The documentation's measured tables and plots, from the committed results files.

A page of ``docs/`` marks where each table goes::

    <!-- results: detection/inference -->
    (written by this script)
    <!-- end results -->

``detection/inference`` names ``benchmarks/results/detection.json`` and its table
``inference``. The script fills every such block, on every page, with the table's title, one
sentence written from its numbers (``benchmarks/summaries.py``), the table, the line saying
where and how it was measured, and a plot (``docs/images/benchmarks/<file>_<table>.png``,
matplotlib: bars, one panel per unit, or lines against the first column for a table saved
with ``plot="lines"``; none for ``plot="none"`` or a marker ending in `` no-plot``).

A title's legend for a mark (``(median of 3; * one run)``) is shown only where a cell of the
table carries the mark (``9,134.7*``), and never on a plot (which draws no marked cell); the
panels of a plot are its units, so no two of them show one quantity on two scales.

    python benchmarks/render.py            # rewrite the pages and the plots
    python benchmarks/render.py --check    # exit 1 if a page is not what the results render
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import summaries
from results import Table, is_number, plain, read

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
DOCS = ROOT / "docs"
IMAGES = DOCS / "images" / "benchmarks"
BLOCK = re.compile(
    r"(<!-- results: ([\w-]+)/(\w+)( no-plot)? -->\n)(.*?)(<!-- end results -->)", re.S
)
# A column's unit: a parenthesised one ("step (s)") or a unit word at its end ("train img/s").
# A parenthesised name is not a unit: "timm (PyTorch)" is a system, its unit the title's.
UNITS = r"img/s|images/s|KiB|MiB|GiB|KB|MB|GB|ms|us|µs|s|min|h|M|%"
UNIT = re.compile(rf"\(({UNITS})\)$|(?<!\S)(img/s|images/s|MiB|GiB|GB|ms|s)$")
# A legend in a title: "; * one run" or "(* one run" up to the next ";" or ")".
MARKS = "*†‡§"
LEGEND = re.compile(rf"(; |(?<=\())([{MARKS}]) [^;()]+")


def pages() -> list[Path]:
    """The documentation's Markdown pages."""
    return sorted(DOCS.glob("*.md"))


def provenance(meta: dict, name: str) -> str:
    cpu = meta["cpu"]
    # The file it was written to, as the repository names it (the run may have used a path).
    command = re.sub(r"--output=\S+", f"--output=benchmarks/results/{name}.json", meta["command"])
    versions = ", ".join(f"{k} {v}" for k, v in meta["versions"].items())
    dirty = " plus uncommitted changes" if meta.get("uncommitted_changes") else ""
    device = meta.get("device", "cpu")
    machine = f"{device} with {cpu['model']}" if device != "cpu" else cpu["model"]
    return (
        f"*Measured {meta['date']} at commit `{meta['commit']}`{dirty} on {machine} "
        f"({cpu['cores']} cores; {', '.join(cpu['flags']) or 'no AVX2'}); {versions}; "
        f"`{command}`.*"
    )


def block(name: str, table_name: str, page: Path, plotted: bool = True) -> str:
    """The markdown that goes between the markers of ``name/table_name``."""
    meta, table = _table(name, table_name, page)
    said = summaries.sentence(f"{name}/{table_name}", table)
    title = shown_title(table)
    text = f"{title}\n\n{said}\n\n{table.markdown()}\n\n{provenance(meta, name)}\n\n"
    if shows_plot(table, plotted):
        text += f"![{plot_title(table)}](images/benchmarks/{name}_{table_name}.png)\n\n"
    return text


def marks_used(table: Table) -> set[str]:
    """The marks (``*``, ``†``, ...) that a cell of the table carries: right after a number
    or word (``9,134.7*``), not as an operator (``n * window``)."""
    text = [cell for row in table.rows for cell in row if isinstance(cell, str)]
    return {m for m in MARKS if any(re.search(rf"[\w.)]{re.escape(m)}(?!\w)", c) for c in text)}


def legends(title: str) -> list[str]:
    """The marks a title explains (``(median of 3; * one run)``: ``["*"]``)."""
    return [match.group(2) for match in LEGEND.finditer(title)]


def shown_title(table: Table, keep: set[str] | None = None) -> str:
    """The title without the legend of a mark that no cell carries (``keep``: the marks whose
    legend stays; by default those the table's cells carry)."""
    keep = marks_used(table) if keep is None else keep
    title = LEGEND.sub(lambda m: m.group(0) if m.group(2) in keep else "", table.title)
    title = title.replace("(; ", "(")  # the legend led the parentheses
    return re.sub(r" ?\(\)", "", title)  # the legend was all they held


def plot_title(table: Table) -> str:
    """A plot's title: no legend, as a plot draws numbers, never a marked cell."""
    return plain(shown_title(table, keep=set()))


def shows_plot(table: Table, plotted: bool) -> bool:
    """Whether a block shows its table's plot: its marker asks for one (no ``no-plot``) and
    the table has one (not saved with ``plot="none"``)."""
    return plotted and table.plot != "none"


def drawn_plots(text: str, page: Path) -> dict[str, Table]:
    """``{image file name: table}`` of the blocks of a page that show a plot."""
    drawn = {}
    for name, table_name, plotted in named_tables(text):
        table = _table(name, table_name, page)[1]
        if shows_plot(table, plotted):
            drawn[f"{name}_{table_name}.png"] = table
    return drawn


def _table(name: str, table_name: str, page: Path) -> tuple[dict, Table]:
    path = RESULTS / f"{name}.json"
    if not path.exists():
        raise SystemExit(f"{_shown(page)} names {_shown(path)}: no such file")
    meta, tables = read(path)
    if table_name not in tables:
        raise SystemExit(f"{_shown(path)} has no table {table_name!r}: {sorted(tables)}")
    return meta, tables[table_name]


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def rendered_page(text: str, page: Path) -> str:
    return BLOCK.sub(
        lambda m: m.group(1) + block(m.group(2), m.group(3), page, not m.group(4)) + m.group(6),
        text,
    )


def named_tables(text: str) -> list[tuple[str, str, bool]]:
    """``(file, table, plotted)`` of each block on a page."""
    return [(m.group(2), m.group(3), not m.group(4)) for m in BLOCK.finditer(text)]


def unit(column: str) -> str:
    """A column's unit: its parenthesised tail ("step (s)") or unit word ("train img/s"), or
    "" for a column named after a system (whose unit the title gives)."""
    match = UNIT.search(column)
    return (match.group(1) or match.group(2)) if match else ""


def plotted_columns(table: Table) -> list[int]:
    """The value columns with a number in some row."""
    return [
        i
        for i in range(len(table.columns))
        if table.kind_of(i) == "value" and any(is_number(r[i]) for r in table.rows)
    ]


def plot(table: Table, path: Path) -> None:
    import matplotlib.pyplot as plt

    figure = draw(table)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=90)
    plt.close(figure)


def draw(table: Table):
    """The table's plot, a matplotlib figure: lines, or bars in one panel per unit (so the
    columns of one quantity, one per system, share one scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    numeric = plotted_columns(table)
    if table.plot == "lines":
        figure, axis = plt.subplots(figsize=(7, 4.5))
        _lines(axis, table, numeric)
        axes = [axis]
    else:
        groups: dict[str, list[int]] = {}
        for i in numeric:
            groups.setdefault(unit(table.columns[i]), []).append(i)
        rows = [r for r in table.rows if any(is_number(r[i]) for i in numeric)]
        figure, axes = plt.subplots(
            1,
            len(groups),
            figsize=(8 if len(groups) == 1 else 4 * len(groups), 0.8 + 0.45 * max(len(rows), 4)),
            squeeze=False,
        )
        axes = list(axes[0])
        for k, (axis, columns) in enumerate(zip(axes, groups.values(), strict=True)):
            _bars(axis, table, rows, columns, labelled=k == 0)
    figure.suptitle(plot_title(table), fontsize=9, wrap=True)
    figure.tight_layout()
    return figure


def _lines(axis, table: Table, numeric: list[int]) -> None:
    x = [row[0] for row in table.rows]
    for i in numeric:
        axis.plot(x, [row[i] for row in table.rows], marker="o", label=plain(table.columns[i]))
    axis.set_xlabel(plain(table.columns[0]))
    axis.set_yscale("log")
    axis.legend(fontsize=8)


def _bars(axis, table: Table, rows: list, columns: list[int], labelled: bool) -> None:
    """One bar per (row, column) with a number; an empty cell draws nothing."""
    height = 0.8 / len(columns)
    for k, i in enumerate(columns):
        drawn = [(n, r[i]) for n, r in enumerate(rows) if is_number(r[i])]
        axis.barh(
            [n + k * height for n, _ in drawn],
            [v for _, v in drawn],
            height,
            label=plain(table.columns[i]),
        )
    axis.set_yticks([n + height * (len(columns) - 1) / 2 for n in range(len(rows))])
    axis.set_yticklabels([plain(table.label(r)) if labelled else "" for r in rows], fontsize=8)
    axis.invert_yaxis()
    values = [r[i] for r in rows for i in columns if is_number(r[i])]
    if values and min(values) > 0 and max(values) / min(values) > 30:
        axis.set_xscale("log")
    if len(columns) == 1:  # a panel of its own: the column names what it shows
        axis.set_xlabel(plain(table.columns[columns[0]]))
    elif unit(table.columns[columns[0]]):
        axis.set_xlabel(unit(table.columns[columns[0]]))
    if len(columns) > 1:
        axis.legend(fontsize=8, loc="lower right")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    args = parser.parse_args(argv)
    stale, drawn = [], set()
    for page in pages():
        text = page.read_text()
        rendered = rendered_page(text, page)
        if args.check:
            stale += [_shown(page)] if rendered != text else []
            continue
        if rendered != text:
            page.write_text(rendered)
        for image, table in drawn_plots(rendered, page).items():
            plot(table, IMAGES / image)
            drawn.add(image)
    if not args.check:
        for image in IMAGES.glob("*.png"):
            if image.name not in drawn:
                image.unlink()  # a plot no page shows any more
    if stale:
        print(f"{', '.join(stale)} differ from the results: python benchmarks/render.py")
        return 1
    if not args.check:
        print(f"wrote the results blocks of {_shown(DOCS)} and their plots in {_shown(IMAGES)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
