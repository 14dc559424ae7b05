"""Every registered model through the shared harness, and the registry's static shape."""

import ast
import inspect
from pathlib import Path

import pytest

from lambda_keras import zoo
from tests.zoo.model_harness import build_small, check_calls, run_model_harness

ZOO_DIR = Path(zoo.__file__).parent


def depth(name: str) -> int | None:
    """The ResNet-RS family depth of a registered model (None for the other families)."""
    spec = zoo.model_info(name).spec
    return spec.depth.depth if isinstance(spec, zoo.resnet_rs.ResNetRSSpec) else None


# Variants whose blocks another default-run model already takes through the harness: the C4
# LambdaResNet-50 (lambda_resnet50's builder with lambda layers in all of c4; its layout is
# test_lambda_resnet.py's) and timm's LambdaResNet-26t (lambda_resnet50ts's blocks and stem).
SAME_BLOCKS = ("lambda_resnet50_c4", "lambda_resnet26t")


def in_default_run(name: str) -> bool:
    """The whole harness runs in CI for the depth-50 models and the other families (20-30 s a
    model beyond depth 50, whose blocks are the depth-50 ones); deeper models and
    ``SAME_BLOCKS`` run it under ``-m slow`` (the deeper ones get a build-and-call check in
    CI)."""
    return (depth(name) or 0) <= 50 and name not in SAME_BLOCKS


@pytest.mark.end_to_end  # every model through fit, save, load and mixed precision
@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=() if in_default_run(name) else pytest.mark.slow)
        for name in zoo.list_models()
    ],
)
def test_model_harness(name, tmp_path):
    # Tracing the training graph takes 20-80 s beyond depth 50 on 2 cores; the deeper models'
    # blocks are those of depth 50, whose fit step (and the trainer tests') runs in graph mode.
    run_model_harness(name, tmp_path, run_eagerly=(depth(name) or 0) > 50)


# The deepest model of each deep family builds and runs in the end-to-end tier (CI); the others
# (the same blocks in other numbers, whose layout test_lambda_resnet.py checks against Table 19)
# under -m slow.
DEEPEST = ("lambda_resnet420", "lambda_resnet420_c4", "resnet_rs420")


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=pytest.mark.end_to_end if name in DEEPEST else pytest.mark.slow)
        for name in zoo.list_models()
        if not in_default_run(name)
    ],
)
def test_deep_models_build_and_run(name):
    check_calls(build_small(name))


def test_every_registered_builder_is_a_static_def():
    """``grep "def LambdaResNet101"`` finds it: every registered name has a module-level def,
    decorated with its registration, in the module the builder says it comes from."""
    for name in zoo.list_models():
        builder = zoo.model_builder(name)
        tree = ast.parse(Path(inspect.getsourcefile(builder)).read_text())
        defs = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
        assert builder.__name__ in defs, name
        registrations = [
            decorator.args[0].value
            for decorator in defs[builder.__name__].decorator_list
            if isinstance(decorator, ast.Call) and decorator.args
            if isinstance(decorator.args[0], ast.Constant)
        ]
        assert registrations == [name]


def test_zoo_exports_exist_statically():
    """``lambda_keras.zoo.__all__`` names only what ``zoo/__init__.py`` imports by name; no
    module of the zoo writes to ``globals()`` or star-imports."""
    tree = ast.parse((ZOO_DIR / "__init__.py").read_text())
    imported = {
        alias.asname or alias.name
        for node in tree.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert "*" not in imported
    assert set(zoo.__all__) <= imported
    builders = {zoo.model_builder(name).__name__ for name in zoo.list_models()}
    assert builders <= set(zoo.__all__)
    for path in ZOO_DIR.glob("*.py"):
        source = path.read_text()
        assert "globals()" not in source and "import *" not in source, path.name
