"""The notebooks' pages on the built site: math typeset by MathJax, the stored figures and
printed results shown, and a link to download each notebook."""

import base64
import html
import re
from pathlib import Path

import pytest

from tests.docs_site import shared_site

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("mkdocs_jupyter")

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
IDS = [p.stem for p in NOTEBOOKS]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    return shared_site(tmp_path_factory)


def page(site: Path, path: Path) -> str:
    return (site / "notebooks" / path.stem / "index.html").read_text()


def outputs(path: Path) -> list:
    notebook = nbformat.read(path, as_version=4)
    return [
        output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs
    ]


def inline_math(path: Path) -> list[str]:
    """The ``$...$`` formulas of a notebook's markdown cells."""
    notebook = nbformat.read(path, as_version=4)
    text = "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "markdown")
    text = re.sub(r"`[^`]*`", "", text)  # code spans are not math
    return re.findall(r"\$([^$]+)\$", text)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_mathjax_loads_with_the_pages_delimiters(site, path):
    text = page(site, path)
    # The page's configuration is MathJax 2's (text/x-mathjax-config, MathJax.Hub.Config) and
    # takes $...$ inline; the script loaded must be MathJax 2 with a TeX input.
    config = re.search(r'<script type="text/x-mathjax-config">(.*?)</script>', text, re.S)
    assert config, "no MathJax configuration on the page"
    assert "MathJax.Hub.Config" in config.group(1)
    assert re.search(r"inlineMath:\s*\[\s*\['\$','\$'\]", config.group(1)), (
        "$...$ is not inline math"
    )
    sources = re.findall(r'<script[^>]* src="([^"]*)"', text)
    mathjax = [src for src in sources if "mathjax" in src.lower()]
    assert mathjax, f"no MathJax script loaded (scripts: {sources})"
    assert all(
        re.search(r"mathjax(/|@)2\.\d+\.\d+/MathJax\.js\?config=TeX-", src) for src in mathjax
    ), mathjax
    assert not re.search(r'<script src="">', text), "an empty script source (no MathJax URL set)"


def test_the_formulas_reach_the_page_intact(site):
    """Each $...$ formula of lambda_layers is on its page as written, for MathJax to typeset
    (not turned into emphasis or other markup by the Markdown renderer)."""
    path = ROOT / "notebooks" / "lambda_layers.ipynb"
    formulas = inline_math(path)
    assert len(formulas) >= 10, formulas
    text = page(site, path)
    for formula in formulas:
        assert f"${html.escape(formula, quote=False)}$" in text, formula


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_the_page_shows_the_stored_figures(site, path):
    pngs = [o.data["image/png"] for o in outputs(path) if "image/png" in o.get("data", {})]
    assert pngs, f"{path.name} stores no figure"
    shown = re.findall(r'<img[^>]* src="data:image/png;base64,([^"]+)"', page(site, path))
    assert len(shown) == len(pngs), (len(shown), len(pngs))
    for png in pngs:
        assert base64.b64decode(png)[:8] == b"\x89PNG\r\n\x1a\n"
        assert png.replace("\n", "") in shown


def output_texts(text: str) -> str:
    """The text of a page's text outputs (what the cells printed), as a reader sees it."""
    blocks = re.findall(
        r'<div class="jp-RenderedText jp-OutputArea-output"[^>]*>\s*<pre>(.*?)</pre>', text, re.S
    )
    return html.unescape(re.sub(r"<[^>]+>", "", "\n".join(blocks)))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_the_page_shows_the_printed_results(site, path):
    printed = [o.text for o in outputs(path) if o.output_type == "stream" and o.name == "stdout"]
    assert printed, f"{path.name} stores no printed output"
    shown = output_texts(page(site, path))
    for block in printed:
        for line in filter(None, (line.strip() for line in block.splitlines())):
            assert line in shown, line


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_the_page_links_to_its_notebook(site, path):
    folder = site / "notebooks" / path.stem
    assert (folder / path.name).read_bytes() == path.read_bytes(), (
        "the .ipynb is not beside its page"
    )
    links = re.findall(r"<a\b[^>]*>", page(site, path))
    download = [a for a in links if f'href="{path.name}"' in a]
    assert download, f"no link to {path.name} on its page"
    assert any(re.search(r"\bdownload\b", a) for a in download), download
