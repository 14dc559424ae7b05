"""What benchmarks/render.py writes around the numbers says only what the numbers show: a
title's legend for a mark ("* one run") appears exactly where a cell carries the mark, and
the panels of a plot that compare one quantity share one scale."""

import re
import sys
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
import render  # noqa: E402
import results  # noqa: E402

sys.path.remove(str(BENCHMARKS))

TITLE = "Lambda layer, forward+backward ms, batch 8 (median of 3; * one run), 2 CPU cores"


def timed(*cells) -> results.Table:
    t = results.Table("layers", TITLE, ["shape", "tensorflow", "jax"])
    for n, cell in enumerate(cells):
        t.add(f"c{n}", 12.5, cell)
    return t


def test_the_one_run_legend_shows_only_with_a_starred_cell():
    assert render.shown_title(timed(10.6, "9,134.7*")) == TITLE
    bare = render.shown_title(timed(10.6, 11.3))
    assert bare == "Lambda layer, forward+backward ms, batch 8 (median of 3), 2 CPU cores"
    assert render.legends(bare) == []
    assert render.legends(TITLE) == ["*"]
    # A star that marks nothing (an operator in a label) is no starred cell.
    t = timed(11.3)
    t.rows[0][0] = "n * window"
    assert render.legends(render.shown_title(t)) == []


@pytest.mark.parametrize(
    ("title", "shown"),
    [
        ("Speed (* one run)", "Speed"),
        ("Speed (* one run; median of 5), ms", "Speed (median of 5), ms"),
        ("Speed, ms; † not installed", "Speed, ms"),
        ("Speed (median of 3; * one run; † timm)", "Speed (median of 3)"),
    ],
)
def test_every_unused_legend_goes_and_the_title_stays_whole(title, shown):
    t = results.Table("t", title, ["op", "ms"])
    t.add("nms", 1.0)
    assert render.shown_title(t) == shown
    t.add("roi_align", "3.5*")
    t.add("resize", "2.0†")
    assert render.shown_title(t) == title


def test_a_plot_title_has_no_legend_as_a_plot_draws_no_marked_cell():
    t = timed(10.6, "9,134.7*")
    assert render.legends(render.plot_title(t)) == []
    figure = render.draw(t)
    assert figure._suptitle.get_text() == render.plot_title(t)
    plt.close(figure)


def rendered_blocks():
    """``(page, file/table, rendered title, table)`` of every block on every page."""
    for page in render.pages():
        for name, table_name, _ in render.named_tables(page.read_text()):
            table = render._table(name, table_name, page)[1]
            title = render.block(name, table_name, page).split("\n", 1)[0]
            yield page.name, f"{name}/{table_name}", title, table


def test_every_page_s_legends_are_those_of_marks_its_cells_carry():
    checked = 0
    for page, name, title, table in rendered_blocks():
        assert set(render.legends(title)) == set(render.legends(table.title)) & set(
            render.marks_used(table)
        ), f"{page}: {name}: {title}"
        checked += bool(render.legends(table.title))
    assert checked >= 2  # the layers tables of benchmarks.md and backends.md have one


def x_ranges(figure) -> list[tuple[float, float]]:
    return [tuple(round(x, 6) for x in axis.get_xlim()) for axis in figure.axes]


def test_systems_compared_on_one_quantity_share_one_scale():
    """timm against the Keras port, both in images/s: not 0-10 beside 0-20."""
    tables = results.read(BENCHMARKS / "results" / "timm_ports.json")[1]
    figure = render.draw(tables["timm_ports"])
    assert len(set(x_ranges(figure))) == 1, x_ranges(figure)
    plt.close(figure)
    t = results.Table("s", "Speed (images/s)", ["model", "timm (PyTorch)", "Keras (TensorFlow)"])
    t.add("a", 10.0, 20.0)
    t.add("b", 6.0, 19.0)
    figure = render.draw(t)
    assert len(set(x_ranges(figure))) == 1, x_ranges(figure)
    assert max(x for _, x in x_ranges(figure)) >= 20.0
    plt.close(figure)


def quantity(axis) -> str:
    """What a bar panel measures: its x label's unit ("step (s)": s), a label without one
    ("parameters"), or "" where the title says it (columns named after systems)."""
    label = axis.get_xlabel()
    return render.unit(label) or render.unit(f"({label})") or label


def test_no_two_panels_of_a_plot_show_one_quantity_on_two_scales():
    """Every committed plot: panels of one unit are one panel (or share their range); the
    panels of different units (params M beside step s) are different quantities."""
    checked = 0
    for page, name, _, table in rendered_blocks():
        if not render.shows_plot(table, True):
            continue
        figure = render.draw(table)
        by_quantity = {}
        for axis, x in zip(figure.axes, x_ranges(figure), strict=True):
            by_quantity.setdefault(quantity(axis), set()).add(x)
        assert all(len(x) == 1 for x in by_quantity.values()), f"{page}: {name}: {by_quantity}"
        unlabelled = [axis for axis in figure.axes if not quantity(axis)]
        assert len(unlabelled) <= 1, f"{page}: {name}: panels of the title's unit"
        plt.close(figure)
        checked += 1
    assert checked >= 10


def test_a_parenthesised_name_is_no_unit():
    assert render.unit("timm (PyTorch)") == "" and render.unit("Keras (TensorFlow)") == ""
    assert [render.unit(c) for c in ["step (s)", "params (M)", "top-1 (%)", "train img/s"]] == [
        "s",
        "M",
        "%",
        "img/s",
    ]
    assert re.fullmatch(render.UNITS, "MiB")
