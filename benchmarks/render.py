"""The documentation's benchmark tables and plots, from the committed results files.

``docs/benchmarks.md`` marks where each table goes::

    <!-- results: detection/inference -->
    (written by this script)
    <!-- end results -->

``detection/inference`` names ``benchmarks/results/detection.json`` and its table
``inference``. The script fills every such block with the table, the line saying where and how
it was measured, and a plot (``docs/images/benchmarks/<file>_<table>.png``, matplotlib: bars, or
lines against the first column for a table saved with ``plot="lines"``).

    python benchmarks/render.py            # rewrite the page and the plots
    python benchmarks/render.py --check    # exit 1 if the page is not what the results render
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from results import Table, read

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
PAGE = ROOT / "docs" / "benchmarks.md"
IMAGES = ROOT / "docs" / "images" / "benchmarks"
BLOCK = re.compile(r"(<!-- results: ([\w-]+)/(\w+) -->\n)(.*?)(<!-- end results -->)", re.S)


def provenance(meta: dict, name: str) -> str:
    cpu = meta["cpu"]
    # The file it was written to, as the repository names it (the run may have used a path).
    command = re.sub(r"--output=\S+", f"--output=benchmarks/results/{name}.json", meta["command"])
    versions = ", ".join(f"{k} {v}" for k, v in meta["versions"].items())
    dirty = " plus uncommitted changes" if meta.get("uncommitted_changes") else ""
    return (
        f"*Measured {meta['date']} at commit `{meta['commit']}`{dirty} on {cpu['model']} "
        f"({cpu['cores']} cores; {', '.join(cpu['flags']) or 'no AVX2'}); {versions}; "
        f"`{command}`.*"
    )


def block(name: str, table_name: str) -> str:
    """The markdown that goes between the markers of ``name/table_name``."""
    path = RESULTS / f"{name}.json"
    if not path.exists():
        raise SystemExit(f"{_shown(PAGE)} names {_shown(path)}: no such file")
    meta, tables = read(path)
    if table_name not in tables:
        raise SystemExit(f"{_shown(path)} has no table {table_name!r}: {sorted(tables)}")
    table = tables[table_name]
    image = f"images/benchmarks/{name}_{table_name}.png"
    return (
        f"{table.title}\n\n{table.markdown()}\n\n{provenance(meta, name)}\n\n"
        f"![{table.title}]({image})\n\n"
    )


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def rendered_page(text: str) -> str:
    return BLOCK.sub(lambda m: m.group(1) + block(m.group(2), m.group(3)) + m.group(5), text)


def named_tables(text: str) -> list[tuple[str, str]]:
    return [(m.group(2), m.group(3)) for m in BLOCK.finditer(text)]


def plot(table: Table, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    numeric = [
        i
        for i in range(len(table.columns))
        if any(
            isinstance(row[i], (int, float)) and not isinstance(row[i], bool) for row in table.rows
        )
        and table.kind_of(i) == "value"
    ]
    labels = [table.label(row) for row in table.rows]
    figure, axis = plt.subplots(figsize=(8, 0.5 + 0.45 * max(len(labels), 4)))
    if table.plot == "lines":
        x = [row[0] for row in table.rows]
        for i in numeric:
            axis.plot(x, [row[i] for row in table.rows], marker="o", label=table.columns[i])
        axis.set_xlabel(table.columns[0])
        axis.set_yscale("log")
        figure.set_size_inches(7, 4.5)
    else:
        height = 0.8 / max(len(numeric), 1)
        for k, i in enumerate(numeric):
            values = [row[i] if isinstance(row[i], (int, float)) else 0 for row in table.rows]
            positions = [n + k * height for n in range(len(labels))]
            axis.barh(positions, values, height, label=table.columns[i])
        axis.set_yticks([n + height * (len(numeric) - 1) / 2 for n in range(len(labels))])
        axis.set_yticklabels(labels, fontsize=8)
        axis.invert_yaxis()
        values = [row[i] for row in table.rows for i in numeric if isinstance(row[i], (int, float))]
        if values and min(values) > 0 and max(values) / min(values) > 30:
            axis.set_xscale("log")
    axis.set_title(table.title, fontsize=9, wrap=True)
    if table.plot == "lines":
        axis.legend(fontsize=8)
    else:
        axis.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=90)
    plt.close(figure)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    args = parser.parse_args(argv)
    text = PAGE.read_text()
    page = rendered_page(text)
    if args.check:
        if page != text:
            print(f"{PAGE.relative_to(ROOT)} differs from the results: python benchmarks/render.py")
            return 1
        return 0
    PAGE.write_text(page)
    for name, table_name in named_tables(page):
        _, tables = read(RESULTS / f"{name}.json")
        plot(tables[table_name], IMAGES / f"{name}_{table_name}.png")
    print(f"wrote {PAGE.relative_to(ROOT)} and its plots in {IMAGES.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
