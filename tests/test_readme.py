"""The README stays a true front page: its code samples run, its links resolve and CI runs its
test command (the documentation's samples: test_docs.py)."""

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

from lambda_keras.zoo import weights as weights_lib
from tests.pretrained_mirror import pretrained_mirror

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def blocks(language):
    return re.findall(rf"```{language}\n(.*?)```", README, flags=re.S)


def test_readme_starts_with_the_two_commands():
    """The title and one sentence of what the project is, then the two commands."""
    first_two = blocks("bash")[:2]
    before = README[: README.index("```bash")].strip().split("\n\n")
    assert before[0] == "# lambda_keras" and len(before) == 2 and len(before[1]) < 300
    assert "scripts/train.py" in first_two[0]
    assert "pytest" in first_two[1]


def test_ci_runs_exactly_the_readme_test_command():
    test_command = blocks("bash")[1].strip()
    ci_lines = [line.strip() for line in (ROOT / ".ci/run").read_text().splitlines()]
    # In a function that CI calls: under `set -e` a failed install or lint inside the `&&` list
    # would not stop CI, the function's status does.
    at = ci_lines.index(test_command)
    assert ci_lines[at - 1 : at + 3] == [
        "readme_test_command() {",
        test_command,
        "}",
        "readme_test_command",
    ]


def test_ci_then_runs_every_pytorch_test_on_the_oldest_supported_pytorch():
    """After the README's command: the [test-torch] floor installed, then the end-to-end tier
    and every torch-marked test, where a missing PyTorch package fails (the README says so)."""
    ci_lines = [line.strip() for line in (ROOT / ".ci/run").read_text().splitlines()]
    tier = '-m "(end_to_end or torch) and not slow"'
    install = ci_lines.index('.venv/bin/pip install -e ".[cpu,test,test-torch]"')
    run = ci_lines.index(f"LAMBDA_KERAS_TORCH_TESTS=required .venv/bin/python -m pytest {tier}")
    assert ci_lines.index(blocks("bash")[1].strip()) < install < run
    assert f"pytest {tier}" in " ".join(README.split())


def test_ci_last_runs_the_quick_tier_on_pytorch_and_on_jax():
    """The README's quick tier again in a process of each other backend, after the PyTorch
    install (the loop's body and its backends, as the README says)."""
    ci = (ROOT / ".ci/run").read_text()
    loop = ci.index("for backend in torch jax; do")
    assert ci.index('pip install -e ".[cpu,test,test-torch]"') < loop
    body = " ".join(ci[loop:].split("done")[0].replace("\\\n", " ").split())
    assert "KERAS_BACKEND=$backend LAMBDA_KERAS_TORCH_TESTS=required" in body
    assert ".venv/bin/python -m pytest --ignore=tests/test_backends.py || status=1" in body
    assert ci.rstrip().endswith('exit "$status"')  # both run, either fails CI
    assert "`KERAS_BACKEND=torch` and with `KERAS_BACKEND=jax`" in " ".join(README.split())


@pytest.mark.end_to_end
def test_python_samples_run(tmp_path, monkeypatch, capsys):
    """``weights="imagenet"`` downloads from a local mirror of the Hub (random weights)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(weights_lib, "CACHE_DIR", str(tmp_path / "keras_cache"))
    samples = blocks("python")
    assert len(samples) == 3  # the layer, the zoo, detection
    with pretrained_mirror(monkeypatch, ("lambda_resnet50ts",)) as hub:
        for sample in samples:
            exec(compile(sample, "README.md", "exec"), {})
    assert any(path.endswith("model.safetensors") for _, path in hub.requests)
    printed = capsys.readouterr().out
    assert "(None, 256, 256, 3)" in printed
    assert "(2, 14, 14, 128)" in printed
    assert "(None, 2048)" in printed
    assert "['lambda_resnet50', 'lambda_resnet50_c4', 'lambda_resnet50ts']" in printed
    assert "(100, 4) (100, 90, 160)" in printed


def test_the_readme_is_a_front_page():
    """About 200 lines at most, no measurement table: figures live in docs/benchmarks.md."""
    assert len(README.splitlines()) <= 200
    table_rows = [line for line in README.splitlines() if line.startswith("|")]
    assert table_rows == []


def test_every_link_resolves():
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README):
        if not target.startswith("http"):
            assert (ROOT / target).exists(), target


def test_no_sample_comment_names_weights_its_call_does_not_load():
    """A statement whose comment says ``weights=...`` passes that argument itself (a default of
    ``weights=None`` behind a comment naming other weights reads as the opposite)."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    samples = [
        sample
        for page in pages
        for sample in re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S)
    ]
    assert len(samples) > len(blocks("python"))
    for sample in samples:
        lines = sample.splitlines()
        comments = {
            token.start[0]: token.string
            for token in tokenize.generate_tokens(io.StringIO(sample).readline)
            if token.type == tokenize.COMMENT
        }
        for node in ast.walk(ast.parse(sample)):
            if not isinstance(node, ast.stmt) or isinstance(node, (ast.FunctionDef, ast.With)):
                continue
            span = range(node.lineno, node.end_lineno + 1)
            said = [comments[n] for n in span if "weights=" in comments.get(n, "")]
            if said and any(isinstance(n, ast.Call) for n in ast.walk(node)):
                code = "\n".join(lines[n - 1].split("#")[0] for n in span)
                assert "weights=" in code, (code, said)
