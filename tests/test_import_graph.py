"""The package's modules import each other without a circle, counting imports deferred inside
functions too (a circle held together by a deferred import is still a circle)."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "lambda_keras"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, modules: set[str]) -> set[str]:
    """The package modules ``path`` imports anywhere in its body (``from a import b`` counts as
    ``a.b`` when that is a module, else ``a``)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                candidate = f"{node.module}.{alias.name}"
                found.add(candidate if candidate in modules else node.module)
    return {name for name in found if name in modules}


def import_graph() -> dict[str, set[str]]:
    paths = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    modules = set(paths)
    # A package's __init__ importing its own submodules is how a package is assembled, not a
    # dependency of those submodules: only edges out of a package's __init__ to other packages
    # count, and a submodule's import of its package means its __init__.
    graph = {}
    for name, path in paths.items():
        edges = imported_modules(path, modules) - {name}
        if path.name == "__init__.py":
            edges = {e for e in edges if not e.startswith(name + ".")}
        graph[name] = edges
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


@pytest.mark.parametrize(
    "package",
    [
        "lambda_keras",  # the whole package, its root modules included
        "lambda_keras.layers",
        "lambda_keras.zoo",
        "lambda_keras.detection",
        "lambda_keras.training",
        "lambda_keras.hub",
    ],
)
def test_no_import_circle(package):
    inside = lambda name: name == package or name.startswith(package + ".")  # noqa: E731
    graph = {
        name: {e for e in edges if inside(e)}
        for name, edges in import_graph().items()
        if inside(name)
    }
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph))


def test_the_checker_finds_a_circle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_timm_checkpoint_mapping_imports_no_model_module():
    edges = import_graph()["lambda_keras.zoo.timm_checkpoint"]
    assert not {e for e in edges if e.startswith("lambda_keras")}, edges


# The package's floors, lowest first: a module imports from its own floor and those below, never
# from one above (the shared core: validation, backend checks, checkpoints, preprocessing).
FLOORS = (
    "lambda_keras.layers",
    "lambda_keras.zoo",
    "lambda_keras.detection",
    "lambda_keras.training",
    "lambda_keras.hub",  # the zoo inside keras-hub: the one floor that imports keras_hub
)


def floor(name: str) -> int:
    """0 for the shared core, then 1 for layers ... 4 for training, 5 for hub."""
    for level, package in enumerate(FLOORS, 1):
        if name == package or name.startswith(package + "."):
            return level
    return 0


def arrows_up(graph: dict[str, set[str]]) -> list[str]:
    """Imports from a floor above (the root package, which assembles them all, aside)."""
    return [
        f"{name} -> {edge}"
        for name, edges in sorted(graph.items())
        if name != "lambda_keras"
        for edge in sorted(edges)
        if floor(edge) > floor(name)
    ]


def test_imports_run_down_the_floors():
    """layers -/-> zoo -/-> detection -/-> training -/-> hub, and the core imports none of
    them."""
    assert arrows_up(import_graph()) == []


def test_the_detection_model_does_not_import_the_data_readers():
    """COCO, labelme and the shapes data feed training; the model and its ops never read them."""
    data = "lambda_keras.training.detection.datasets"
    found = [
        f"{name} -> {edge}"
        for name, edges in import_graph().items()
        if name.startswith("lambda_keras.detection") and not name.startswith(data)
        for edge in edges
        if edge == data or edge.startswith(data + ".")
    ]
    assert found == []


def test_the_floor_check_finds_an_arrow_up():
    graph = {
        "lambda_keras.layers.a": {"lambda_keras.zoo.b", "lambda_keras._validation"},
        "lambda_keras.preprocessing": {"lambda_keras.layers.a"},
        "lambda_keras": {"lambda_keras.training"},
    }
    assert arrows_up(graph) == [
        "lambda_keras.layers.a -> lambda_keras.zoo.b",
        "lambda_keras.preprocessing -> lambda_keras.layers.a",
    ]
