"""The documentation site builds without a warning, documents every public name, and each page's
code samples run (in one namespace per page, in order, as a reader would run them)."""

import ast
import importlib
import importlib.util
import inspect
import json
import os
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

import lambda_keras
from lambda_keras.zoo import weights as weights_lib
from tests.pretrained_mirror import pretrained_mirror

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = sorted(p.name for p in DOCS.glob("*.md") if "```python" in p.read_text())
# What each page's samples print that shows they did what the page says.
PRINTED = {
    "layers.md": ["(2, 14, 14, 128)", "(4, 100, 64)"],
    "backends.md": ["(2, 10)"],
    "zoo.md": ["(None, 2048)", "['lambda_resnet50', 'lambda_resnet50_c4', 'lambda_resnet50ts']"],
    "index.md": ["(2, 14, 14, 128)", "(None, 10)", "(100, 4) (100, 90, 160)"],
}


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    site_dir = tmp_path_factory.mktemp("site")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site_dir)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return site_dir


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
        with pretrained_mirror(monkeypatch, ("lambda_resnet50ts",)):
            for sample in python_blocks((DOCS / page).read_text()):
                exec(compile(sample, f"docs/{page}", "exec"), namespace)
    finally:
        for name in set(weights_lib.registered_weights()) - registered:
            weights_lib.unregister_weights(name)
    printed = capsys.readouterr().out
    for expected in PRINTED.get(page, []):
        assert expected in printed, (expected, printed[-2000:])


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
    assert home[0] == readme[0] + readme[1]


def registry_tables():
    sys.path.insert(0, str(DOCS))
    try:
        import registry_tables
    finally:
        sys.path.remove(str(DOCS))
    return registry_tables


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
