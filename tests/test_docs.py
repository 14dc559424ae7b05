"""The documentation site builds without a warning, documents every public name, and each page's
code samples run (in one namespace per page, in order, as a reader would run them)."""

import importlib
import json
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

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
PACKAGES = ("layers", "zoo", "detection")


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


@pytest.mark.parametrize("package", PACKAGES)
def test_the_api_reference_has_every_public_name(site, package):
    module = importlib.import_module(f"lambda_keras.{package}")
    html = (site / "api" / package / "index.html").read_text()
    anchors = set(re.findall(r'id="(lambda_keras\.[\w.]+)"', html))
    missing = [
        name
        for name in module.__all__
        if f"lambda_keras.{package}.{name}" not in anchors
        and f"lambda_keras.{package}.{name}.{name}" not in anchors
    ]
    assert not missing, missing
    documented = [n for n in module.__all__ if not isinstance(getattr(module, n), types.ModuleType)]
    assert len(documented) >= 5


# The detection page's modules beside the package (their names share the page).
DETECTION_MODULES = (
    "ops",
    "transform",
    "targets",
    "target_checks",
    "serving",
    "convert_torchvision",
    "data.coco",
    "data.coco_eval",
    "data.labelme",
    "data.shapes",
)


@pytest.mark.parametrize("name", DETECTION_MODULES)
def test_the_detection_reference_has_every_public_name_of_its_modules(site, name):
    module = importlib.import_module(f"lambda_keras.detection.{name}")
    html = (site / "api" / "detection" / "index.html").read_text()
    anchors = set(re.findall(r'id="(lambda_keras\.[\w.]+)"', html))
    missing = [n for n in module.__all__ if f"{module.__name__}.{n}" not in anchors]
    assert module.__all__ and not missing, missing


def test_the_training_reference_renders_its_modules(site):
    html = (site / "api" / "training" / "index.html").read_text()
    for module in ("data", "recipes", "trainer", "resume", "data_parallel", "detection.run"):
        assert f'id="lambda_keras.training.{module}"' in html, module


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


def test_the_benchmark_tables_are_the_results_files():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import render
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    text = (DOCS / "benchmarks.md").read_text()
    assert render.named_tables(text), "no results block in docs/benchmarks.md"
    assert render.rendered_page(text) == text, "python benchmarks/render.py"
    for name, table in render.named_tables(text):
        assert (DOCS / "images" / "benchmarks" / f"{name}_{table}.png").exists()


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
