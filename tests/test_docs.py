"""The documentation site builds without a warning, documents every public name, and each page's
code samples run (in one namespace per page, in order, as a reader would run them)."""

import ast
import html as html_lib
import importlib
import importlib.util
import inspect
import json
import os
import pkgutil
import re
import sys
from pathlib import Path

import pytest

import lambda_keras
from lambda_keras.zoo import weights as weights_lib
from tests.detection.torchvision import torchvision_states
from tests.docs_site import docs_module, shared_site
from tests.pretrained_mirror import pretrained_mirror, publish_coco

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = sorted(p.name for p in DOCS.glob("*.md") if "```python" in p.read_text())
# What each page's samples print that shows they did what the page says.
PRINTED = {
    "layers.md": ["(2, 14, 14, 128)", "(4, 100, 64)"],
    "backends.md": ["(2, 10)"],
    "zoo.md": [
        "(None, 2048)",
        "['lambda_resnet50', 'lambda_resnet50_c4', 'lambda_resnet50ts']",
        "TimmLambdaResNetImageClassifier (None, 1000)",
    ],
    "weights.md": ["same top five as the model above: True"],
    "index.md": ["(2, 14, 14, 128)", "(None, 10)", "(100, 4) (100, 90, 160)"],
    "detection.md": [
        "LambdaResNetBackbone ['P2', 'P3', 'P4', 'P5']",
        "['boxes', 'confidence', 'labels', 'num_detections']",
    ],
}


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    return shared_site(tmp_path_factory)


def test_the_site_builds_strictly(site):
    assert (site / "index.html").exists() and (site / "api" / "layers" / "index.html").exists()


def public_modules() -> list[str]:
    """Every module of the package without a private part in its name."""
    return [
        info.name
        for info in pkgutil.walk_packages(lambda_keras.__path__, "lambda_keras.")
        if not any(part.startswith("_") for part in info.name.split(".")[1:])
    ]


def public_names(name: str) -> tuple[object, dict[str, object]]:
    """``(module, {name: object})``: its ``__all__``, or else the functions and classes it
    defines without a leading underscore. A module needing an optional library that is not
    installed (PyTorch) gives those names read from its source, objects unknown."""
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as error:
        if error.name not in ("torch", "torchvision"):
            raise
        path = Path(importlib.util.find_spec(name).origin)
        tree = ast.parse(path.read_text())
        listed = [
            ast.literal_eval(node.value)
            for node in tree.body
            if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "__all__"
        ]
        defined = [
            node.name
            for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_")
        ]
        return None, dict.fromkeys(listed[0] if listed else defined)
    if hasattr(module, "__all__"):
        return module, {n: getattr(module, n) for n in module.__all__}
    return module, {
        n: o
        for n, o in vars(module).items()
        if not n.startswith("_")
        and (inspect.isfunction(o) or inspect.isclass(o))
        and o.__module__ == name
    }


@pytest.fixture(scope="module")
def anchors(site) -> set[str]:
    pages = (site / "api").glob("*/index.html")
    return {
        a for page in pages for a in re.findall(r'id="(lambda_keras\.[\w.]+)"', page.read_text())
    }


def test_the_api_reference_has_every_public_module_and_name(anchors):
    """Each public module has its anchor, and each of its public names has one there or where
    the same object is documented (a re-export of a package or another module)."""
    modules = public_modules()
    loaded = {name: public_names(name) for name in modules}
    missing = [name for name in modules if name not in anchors]
    for name, (_, names) in loaded.items():
        for attribute, obj in names.items():
            homes = {f"{name}.{attribute}", f"{name}.{attribute}.{attribute}"}
            if obj is not None:
                homes |= {
                    f"{other}.{attribute}"
                    for other, (m, _) in loaded.items()
                    if m is not None and getattr(m, attribute, None) is obj
                }
            if not homes & anchors:
                missing.append(f"{name}.{attribute}")
    assert len(modules) > 80 and missing == [], missing


@pytest.mark.end_to_end
@pytest.mark.parametrize("page", PAGES)
def test_the_samples_run(page, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(weights_lib, "CACHE_DIR", str(tmp_path / "keras_cache"))
    # A sample that sets KERAS_BACKEND (no effect here, Keras is imported) is undone after,
    # so that the processes this worker starts later keep TensorFlow.
    monkeypatch.setenv("KERAS_BACKEND", os.environ.get("KERAS_BACKEND", "tensorflow"))
    registered = set(weights_lib.registered_weights())
    namespace = {}
    try:  # weights="imagenet" downloads from a local mirror of the Hub (random weights)
        with pretrained_mirror(monkeypatch, ("lambda_resnet50ts",)) as hub:
            if page == "detection.md":  # weights="coco": a file that finds "person"s
                state = torchvision_states.detecting_state("maskrcnn_resnet50_fpn")
                publish_coco(hub, "maskrcnn_resnet50_fpn", tmp_path, monkeypatch, state)
            for number, sample in enumerate(python_blocks((DOCS / page).read_text())):
                exec(compile(sample, f"docs/{page}", "exec"), namespace)
                if page == "detection.md" and number == 0:
                    check_the_coco_sample(namespace, capsys)
    finally:
        for name in set(weights_lib.registered_weights()) - registered:
            weights_lib.unregister_weights(name)
    printed = capsys.readouterr().out
    for expected in PRINTED.get(page, []):
        assert expected in printed, (expected, printed[-2000:])
    if page == "weights.md":  # the photo's top five classes, one a line with a probability
        assert len(re.findall(r"^\S.* [01]\.\d{3}$", printed, re.M)) == 5, printed[-2000:]


def check_the_coco_sample(namespace: dict, capsys) -> None:
    """The detection page's first sample prints a line per detection scored 0.5 or more: a
    COCO category, its score and its box in the photo's pixels."""
    printed = capsys.readouterr().out
    found = namespace["found"]
    confident = int((found["scores"][: int(found["num_detections"])] >= 0.5).sum())
    lines = re.findall(r"^\S.* [01]\.\d\d \[\d+, \d+, \d+, \d+\]$", printed, re.M)
    assert len(lines) == confident > 0, printed[-2000:]
    assert all(line.startswith("person ") for line in lines), lines[:3]
    assert found["masks"].shape[1:] == (427, 640)


def test_every_page_is_in_the_navigation():
    nav = (ROOT / "mkdocs.yml").read_text()
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    assert {page for page in pages if page not in nav} == set()


def test_every_notebook_is_a_page_of_the_site(site):
    """The notebooks render (mkdocs-jupyter, from docs/notebooks/ linking to notebooks/)."""
    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb"))
    assert sorted(p.name for p in (DOCS / "notebooks").iterdir()) == [p.name for p in notebooks]
    nav = (ROOT / "mkdocs.yml").read_text()
    for notebook in notebooks:
        cells = json.loads(notebook.read_text())["cells"]
        title = next(c for c in cells if c["cell_type"] == "markdown")["source"][0]
        page = (site / "notebooks" / notebook.stem / "index.html").read_text()
        assert title.lstrip("# ").strip() in page and "highlight-ipynb" in page, notebook.name
        assert (
            f"notebooks/{notebook.name}" in nav
            and f"notebooks/{notebook.name})" in (DOCS / "notebooks.md").read_text()
        )


def test_the_measured_tables_are_the_results_files():
    """Every results block on every page is what benchmarks/render.py makes of its file."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import render
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    blocks = 0
    for page in render.pages():
        text = page.read_text()
        assert render.rendered_page(text, page) == text, f"{page.name}: python benchmarks/render.py"
        drawn = render.drawn_plots(text, page)
        for name, table, _ in render.named_tables(text):
            blocks += 1
            image = DOCS / "images" / "benchmarks" / f"{name}_{table}.png"
            assert image.exists() == (image.name in drawn), image
    assert blocks >= 15


def test_the_home_page_gives_the_readme_s_two_commands():
    readme = re.findall(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)
    home = re.findall(r"```bash\n(.*?)```", (DOCS / "index.md").read_text(), flags=re.S)
    # The home page breaks them to fit its column: the same commands with the breaks joined.
    assert re.sub(r" \\\n +", " ", home[0]) == readme[0] + readme[1]


def registry_tables():
    return docs_module("registry_tables")


def test_the_model_and_weights_tables_are_what_the_registries_render():
    module = registry_tables()
    tables = module.tables()
    marked = set()
    for path in sorted(DOCS.glob("*.md")):
        page = path.read_text()
        marked |= {m[2] for m in module.BLOCK.finditer(page)}
        assert module.rendered(page, tables) == page, f"{path.name}: python docs/registry_tables.py"
    assert marked == set(tables)
    for name in weights_lib.registered_weights():
        assert f"`{name}`" in tables["weights"]


@pytest.mark.slow
def test_the_measured_model_sizes_are_the_models_as_built():
    module = registry_tables()
    assert module.measure() == json.loads(module.SIZES.read_text())


# A reST role (":class:`X`") shows as raw text in the Markdown reference: cross-references are
# Markdown ("[X][lambda_keras.x.X]"), checked by the strict build above.
REST_ROLE = re.compile(r":(class|func|mod|meth|attr|data|obj|exc|ref):`")


def test_no_rest_role_in_what_the_site_renders():
    sources = [*sorted((ROOT / "lambda_keras").rglob("*.py")), *sorted(DOCS.glob("**/*.md"))]
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sources
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if REST_ROLE.search(line)
    ]
    assert len(sources) > 50 and not found, found


@pytest.mark.end_to_end  # with the pages' samples (test_the_samples_run)
def test_the_docstring_examples_run():
    """Every ``>>>`` example in the library's docstrings (the reference renders them) runs and
    prints what it shows."""
    import doctest

    sources = [p for p in (ROOT / "lambda_keras").rglob("*.py") if ">>>" in p.read_text()]
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    examples = 0
    for path in sources:
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for test in finder.find(importlib.import_module(name)):
            examples += len(test.examples)
            runner.run(test)
    assert sources and examples and not runner.failures, runner.summarize()


API_PAGES = ("layers", "zoo", "detection", "hub", "training", "core")
# What a reader sees first on each package's page (its main entry points, in __all__'s order).
MAIN_NAMES = {
    "layers": "lambda_keras.layers.LambdaLayer",
    "zoo": "lambda_keras.zoo.get_model",
    "detection": "lambda_keras.detection.maskrcnn_resnet50_fpn",
    "hub": "lambda_keras.hub.LambdaResNetBackbone",
}
# Code fits 80 columns: the content column shows them at 1280 px with room to spare.
CODE_COLUMNS = 80


def api_page(site, page: str) -> str:
    return (site / "api" / page / "index.html").read_text()


def documented_object(path: str):
    """The module-level object an API anchor documents (None for a member or a module)."""
    try:  # a module's own heading (a package may hold a function of the same name)
        importlib.import_module(path)
        return None
    except ImportError:
        pass
    parts = path.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            module = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        return getattr(module, parts[cut], None) if cut == len(parts) - 1 else None
    return None


def test_every_example_renders_as_code(site):
    """An ``Examples:`` section indented under its header is a code block; at the header's
    indent its ``>>>`` lines became nested blockquotes of run-together prose."""
    sources = sorted((ROOT / "lambda_keras").rglob("*.py"))
    sections = sum(len(re.findall(r"^\s*Examples:$", p.read_text(), re.M)) for p in sources)
    pages = [api_page(site, page) for page in API_PAGES]
    rendered = [part for page in pages for part in examples_sections(page)]
    assert sections >= 20 and len(rendered) >= sections, (sections, len(rendered))
    for section in rendered:  # every prompt and every line of code inside a code block
        outside = re.sub(r"<pre>.*?</pre>", "", section, flags=re.S)
        assert "<pre>" in section and "&gt;&gt;&gt;" not in outside, outside[:300]
    quoted = [page for page, html in zip(API_PAGES, pages, strict=True) if "<blockquote>" in html]
    assert quoted == []


def examples_sections(html: str) -> list[str]:
    """Each rendered ``Examples:`` section: its HTML up to the next section, member or
    heading."""
    starts = [m.end() for m in re.finditer(r'doc-section-title">Examples:</span>', html)]
    ends = re.compile(r'doc-section-title"|<h[1-6] |<div class="doc doc-object')
    return [
        html[start : (ends.search(html, start) or re.search("$", html)).start()] for start in starts
    ]


def test_each_class_and_function_appears_once_on_its_page(site):
    for page in API_PAGES:
        homes = {}
        for anchor in re.findall(r'<h[2-6] id="(lambda_keras[\w.]+)"', api_page(site, page)):
            obj = documented_object(anchor)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                homes.setdefault(id(obj), []).append(anchor)
        twice = [anchors for anchors in homes.values() if len(anchors) > 1]
        fewest = 2 if page == "hub" else 11  # two backbones; the others are large packages
        assert len(homes) >= fewest and twice == [], (page, twice)


def test_the_package_pages_open_with_their_main_names(site):
    for page, name in MAIN_NAMES.items():
        anchors = re.findall(r'<h[23] id="(lambda_keras[\w.]+)"', api_page(site, page))
        assert anchors[:2] == [f"lambda_keras.{page}", name], (page, anchors[:3])


def sections_of(html: str, prefix: str) -> dict[str, str]:
    """Each ``<h2>``/``<h3>`` anchored object under ``prefix`` with its HTML up to the next."""
    found = list(re.finditer(rf'<h[23] id="({re.escape(prefix)}\w+)"', html))
    ends = [m.start() for m in found[1:]] + [len(html)]
    return {m[1]: html[m.start() : end] for m, end in zip(found, ends, strict=True)}


def test_every_zoo_builder_has_its_arguments_table(site):
    """The builders' arguments come from ``register_model`` at import (one table per family):
    the reference shows them (docs/griffe_registered_docs.py)."""
    sections = sections_of(api_page(site, "zoo"), "lambda_keras.zoo.")
    zoo = lambda_keras.zoo
    builders = {zoo.model_builder(name).__name__ for name in zoo.list_models()}
    assert len(builders) >= 24
    for builder in builders:
        section = sections[f"lambda_keras.zoo.{builder}"]
        for argument in ("include_top", "weights", "input_shape", "classifier_activation"):
            assert f"<code>{argument}</code>" in section, (builder, argument)


def table_rows(html: str, title: str) -> list[str]:
    """The rows of every docstring table titled ``title`` ("Parameters:", "Returns:")."""
    rows = []
    for match in re.finditer(rf'doc-section-title">{title}</span>.*?</table>', html, re.S):
        rows.append(re.findall(r'<tr class="doc-section-item">(.*?)</tr>', match[0], re.S))
    return rows


def test_grouped_arguments_have_types_and_defaults_and_returns_are_one_row(site):
    grouped = 0
    for page in API_PAGES:
        html = api_page(site, page)
        for rows in table_rows(html, "Parameters:"):
            for row in rows:
                name = re.search(r"<code>(.*?)</code>", row)[1]
                if "," in name:
                    grouped += 1
                    assert "required" not in row, (page, name)
        assert [len(rows) for rows in table_rows(html, "Returns:") if len(rows) != 1] == []
    assert grouped >= 4


def code_lines(text: str) -> list[str]:
    blocks = re.findall(r"```\w*\n(.*?)```", text, re.S)
    return [line for block in blocks for line in block.split("\n")]


def test_code_on_the_pages_fits_the_column(site):
    """No sample needs horizontal scrolling at 1280 px: prose pages' code blocks, the
    notebooks' code cells (their pages show no prompt column: docs/stylesheets/extra.css) and
    the reference's signatures and examples."""
    long = [
        f"{path.name}: {line}"
        for path in sorted(DOCS.glob("*.md"))
        for line in code_lines(path.read_text())
        if len(line) > CODE_COLUMNS
    ]
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in json.loads(notebook.read_text())["cells"]:
            if cell["cell_type"] == "code":
                lines = "".join(cell["source"]).split("\n")
                long += [f"{notebook.name}: {x}" for x in lines if len(x) > CODE_COLUMNS]
    for page in API_PAGES:
        html = api_page(site, page)
        for block in re.finditer(r"<pre>(.*?)</pre>", html, re.S):
            if is_attribute_value(html, block.start()):
                continue
            text = html_lib.unescape(re.sub(r"<[^>]+>", "", block[1]))
            long += [f"api/{page}: {line}" for line in text.split("\n") if len(line) > CODE_COLUMNS]
    assert long == [], long


def is_attribute_value(html: str, start: int) -> bool:
    """Whether the code block at ``start`` shows a constant's value (a URL, a long string):
    those wrap (docs/stylesheets/extra.css) instead of scrolling."""
    last_object = html.rfind('<div class="doc doc-object ', 0, start)
    return html.startswith('<div class="doc doc-object doc-attribute">', last_object)


# A table's narrowest layout in characters: per column its widest unbreakable piece, a word or
# a code span (docs/stylesheets/extra.css keeps a prose page's table code on one line), plus the
# cells' padding. At 1280 px the content column is 978 px wide (the page's contents sit in the
# navigation); the widest table of these pages, which Chromium lays out there without scrolling
# (tests/test_docs_layout.py), measures 134.
TABLE_COLUMNS = 145
TABLE_PADDING = 4


def widest_piece(cell: str) -> int:
    cell = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", cell)  # a link shows its text
    cell = re.sub(r"<[^>]+>", " ", cell)
    words = re.findall(r"`([^`]*)`", cell) + re.sub(r"`[^`]*`", " ", cell).split()
    return max(map(len, words), default=0)


def markdown_tables(text: str) -> list[list[list[str]]]:
    """Each table of a page as rows of cells (the header first, the rule left out)."""
    tables, rows = [], []
    for line in [*text.split("\n"), ""]:
        if line.startswith("|"):
            rows.append([c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]])
        elif rows:
            tables.append([row for i, row in enumerate(rows) if i != 1])
            rows = []
    return tables


def test_no_table_needs_horizontal_scrolling():
    widths = {}
    for path in sorted(DOCS.glob("*.md")):
        for number, table in enumerate(markdown_tables(path.read_text())):
            columns = range(len(table[0]))
            widest = [max(widest_piece(r[c]) for r in table if c < len(r)) for c in columns]
            widths[f"{path.name} table {number}"] = sum(widest) + TABLE_PADDING * len(widest)
    assert len(widths) > 30
    assert {k: w for k, w in widths.items() if w > TABLE_COLUMNS} == {}
