"""No measured number is typed by hand: every time, memory size, speed ratio, score or test
count in the documentation's prose (its pages, the README, the notebooks' text) is one that a
results file holds (``benchmarks/results/``, ``docs/data/``, the weights registry's metrics), or
the paper's own figure on a line that cites it. Tables and sentences that programs render
(results, registry and generated blocks) and code are what the programs wrote; their own tests
check them."""

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md")) + [ROOT / "README.md"]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))  # pages of the site too

# A number with the unit of a measurement: a time, a memory size, a throughput, a ratio ("2.3x",
# not "3x3" or "28 x 28"), a parameter count in millions; or a score (AP, top-1) and a count of
# passed tests. A range ("0.4-0.5x", "3 - 13 s") gives each of its ends.
NUMBER = r"\d[\d,]*(?:\.\d+)?"
WITH_UNIT = re.compile(
    rf"(?<![\w.,/-])({NUMBER}(?:\s?[-–]\s?{NUMBER})*)\s?"
    r"(ms|s|seconds|min|minutes|img/s|images/s|MiB|GiB|GB|MB|M|x)(?![\w/])(?!\s?\d)"
)
SCORE = re.compile(rf"\b(?:box AP|mask AP|AP50|AP|top-1|top-5)(?: of| is| =)?\s({NUMBER})\b")
PASSED = re.compile(rf"\b({NUMBER}) passed\b")
CITES_THE_PAPER = re.compile(r"Table \d|§\s?\d|\bApp\. [A-F]|Appendix|\bEq\. ?\d")
RENDERED = re.compile(
    r"<!-- (results|registry|generated): .*?<!-- end (results|registry|generated) -->", re.S
)


def prose(text: str) -> list[str]:
    """The page's lines a person typed: no code, rendered block or link target."""

    def blank(match: re.Match) -> str:  # keeps the line numbers of the file
        return "\n" * match[0].count("\n")

    text = RENDERED.sub(blank, text)
    text = re.sub(r"```.*?```", blank, text, flags=re.S)
    text = re.sub(r"<!--.*?-->", blank, text, flags=re.S)
    lines = []
    for line in text.splitlines():
        line = re.sub(r"`[^`]*`", "", line)
        line = re.sub(r"\]\([^)]*\)", "]", line)
        lines.append(re.sub(r"https?://\S+", "", line))
    return lines


def typed_numbers(text: str) -> list[tuple[int, str, str]]:
    """``(line, number, unit)`` of each measured-looking number of the prose that does not cite
    the paper on its line or the line before."""
    found, lines = [], prose(text)
    for n, line in enumerate(lines, 1):
        if CITES_THE_PAPER.search(line) or (n > 1 and CITES_THE_PAPER.search(lines[n - 2])):
            continue  # a citation on the line or the one before (a wrapped sentence)
        for match in WITH_UNIT.finditer(line):
            for value in re.findall(NUMBER, match[1]):
                found.append((n, value, match[2]))
        for pattern, unit in ((SCORE, "score"), (PASSED, "passed")):
            found += [(n, m[1], unit) for m in pattern.finditer(line)]
    return found


def _numbers(data) -> list[float]:
    """Every number in a JSON value, strings' numbers included ("47 img/s")."""
    if isinstance(data, bool):
        return []
    if isinstance(data, (int, float)):
        return [float(data)]
    if isinstance(data, str):
        return [float(x.replace(",", "")) for x in re.findall(NUMBER, data)]
    if isinstance(data, dict):
        return [x for v in data.values() for x in _numbers(v)]
    if isinstance(data, (list, tuple)):
        return [x for v in data for x in _numbers(v)]
    return []


def held_numbers() -> list[float]:
    """What the results files and the registry hold."""
    held = []
    for path in [*(ROOT / "benchmarks" / "results").glob("*.json"), *DOCS.glob("data/*.json")]:
        data = json.loads(path.read_text())
        held += _numbers({k: v for k, v in data.items() if k in ("tables", "settings")} or data)
    from lambda_keras.zoo.weights import registered_weights

    for spec in registered_weights().values():
        held += _numbers(getattr(spec, "metrics", {}) or {})
    return held


def is_held(value: str, unit: str, held: list[float]) -> bool:
    number = float(value.replace(",", ""))
    digits = len(value.partition(".")[2])
    scale = 1e6 if unit == "M" else 1.0
    return any(round(h / scale, digits) == number for h in held)


def test_every_measured_number_on_the_pages_is_in_a_results_file():
    held = held_numbers()
    texts = {page.relative_to(ROOT): page.read_text() for page in PAGES}
    for notebook in NOTEBOOKS:
        cells = json.loads(notebook.read_text())["cells"]
        markdown = ["".join(c["source"]) for c in cells if c["cell_type"] == "markdown"]
        texts[notebook.relative_to(ROOT)] = "\n\n".join(markdown)
    stray = [
        f"{name}:{line}: {value} {unit}"
        for name, text in texts.items()
        for line, value, unit in typed_numbers(text)
        if not is_held(value, unit, held)
    ]
    assert stray == [], "typed by hand (render it from a results file):\n" + "\n".join(stray)


@pytest.mark.parametrize(
    "line, found",
    [
        ("a step takes about 0.8 s alone", [("0.8", "s")]),
        ("JAX trains at 0.4-0.5x TensorFlow's speed", [("0.4", "x"), ("0.5", "x")]),
        (
            "box AP 0.951 and mask AP 0.971 after 1,335 s",
            [("0.951", "score"), ("0.971", "score"), ("1,335", "s")],
        ),
        (
            "54 passed; peak 311 MiB, 47.4M parameters",
            [("54", "passed"), ("311", "MiB"), ("47.4", "M")],
        ),
        ("3x3 convolutions at 1024 x 1024, 28 x 28 masks, batch 8, `100 s` in code", []),
        ("Table 3 gives 15.0M parameters", []),
    ],
)
def test_the_check_finds_measured_numbers_and_only_those(line, found):
    assert sorted((v, u) for _, v, u in typed_numbers(line)) == sorted(found)


def test_a_number_is_held_at_the_precision_it_is_written():
    assert is_held("1,335", "s", [1335.2]) and is_held("0.95", "score", [0.951])
    assert not is_held("0.96", "score", [0.951]) and not is_held("9.5", "x", [10.25])
    assert is_held("36.9", "M", [36866920.0])


def test_depthwise_wins_no_shape_of_the_layer_tables():
    """docs/layers.md says so; the tables it points at must keep saying it."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from results import read
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    for name in ("layers", "layers_onednn"):
        table = read(ROOT / "benchmarks" / "results" / f"{name}.json")[1]["layers"]
        values = range(table.labels, len(table.columns))
        for shape in dict.fromkeys(tuple(r[:2]) for r in table.rows):
            rows = [r for r in table.rows if tuple(r[:2]) == shape and r[2] != "depthwise"]
            depthwise = next(r for r in table.rows if tuple(r[:2]) == shape and r[2] == "depthwise")
            for c in values:
                timed = [r[c] for r in rows if isinstance(r[c], float)]
                if isinstance(depthwise[c], float) and timed:
                    assert depthwise[c] > min(timed), (name, shape, table.columns[c])
