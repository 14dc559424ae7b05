"""Test session set-up: quiet TensorFlow, its threads shared out among pytest-xdist's workers,
deterministic seeds, float32 policy restored, and how pytest-xdist spreads the tests over its
worker processes."""

import importlib.util
import os
import tempfile

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# pytest-xdist's workers share the cores: each TensorFlow process (a worker, and the scripts it
# starts, which inherit this) computes an op on cores / workers threads instead of every core
# (2 cores, 2 workers: 303 layer, zoo and detection tests in 190 and 191 s against 208 and 196 s).
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if _WORKERS > 1:
    os.environ.setdefault("TF_NUM_INTRAOP_THREADS", str(max(1, (os.cpu_count() or 1) // _WORKERS)))

# Before Keras imports TensorFlow: lambda_keras turns TensorFlow's oneDNN on unless the
# environment chose (lambda_keras/backend/onednn.py), so tests run what a user importing it
# first runs.
import lambda_keras  # noqa: E402, F401

# isort: split
import keras  # noqa: E402  after the environment it reads

from tests.failures_file import pytest_runtest_logreport  # noqa: E402, F401  a hook


@pytest.fixture(autouse=True, scope="session")
def _temporary_files_under_basetemp(tmp_path_factory):
    """What ``tempfile`` makes during the run, in the tests, the library, notebook kernels and
    every process a test starts (they inherit ``TMPDIR``), goes under pytest's basetemp, never
    into the machine's temporary folder: samples and notebooks that keep a folder for the reader
    (``tempfile.mkdtemp``) left 100 MB there a run. A run that passes removes its basetemp
    (``tmp_path_retention_policy`` in pyproject.toml)."""
    folder = tmp_path_factory.mktemp("tempfile")
    patch = pytest.MonkeyPatch()
    patch.setenv("TMPDIR", str(folder))
    patch.setattr(tempfile, "tempdir", str(folder))
    yield folder
    patch.undo()


@pytest.fixture(autouse=True)
def _eager_torch_steps_unless_marked(request, monkeypatch):
    """On PyTorch the zoo's steps compile with Inductor by default, a minute or more per step
    and input shape on 2 cores (lambda_keras/backend/torch_compiled_step.py): the tests of other
    things run Keras' eager steps, and those marked ``torch_compiled`` the default (set either way:
a child process inherits its parent test's setting)."""
    marked = request.node.get_closest_marker("torch_compiled") is not None
    monkeypatch.setenv("LAMBDA_KERAS_TORCH_COMPILE", "1" if marked else "0")


@pytest.fixture(autouse=True)
def _seed_and_policy():
    keras.utils.set_random_seed(1234)
    yield
    keras.config.set_dtype_policy("float32")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: long checks, excluded from the default run")
    config.addinivalue_line(
        "markers",
        "end_to_end: whole training runs, every model through the harness, the deepest models, "
        "real photos, exports, lowering, the rest of a check's shape and variant cases, scripts "
        "and notebooks: the end-to-end tier (-m 'end_to_end and not slow', run by .ci/run after "
        "the README's quick tier, the default run)",
    )
    config.addinivalue_line(
        "markers",
        "backends(*names): runs on these Keras backends only (their child runs of "
        "tests/test_backends.py run it); deselected elsewhere, not skipped",
    )
    config.addinivalue_line(
        "markers",
        "torch(*packages): needs PyTorch installed (and the packages named: torchvision, timm); "
        "skipped without it in the quick tier, run by .ci/run's second stage, which installs the "
        "oldest supported PyTorch ([test-torch]) and sets LAMBDA_KERAS_TORCH_TESTS=required: "
        "there a missing package fails the test",
    )
    config.addinivalue_line(
        "markers",
        "torch_compiled: on PyTorch, the zoo's steps compile as they do for users (every other "
        "test runs them eagerly: LAMBDA_KERAS_TORCH_COMPILE=0)",
    )
    config.addinivalue_line(
        "markers",
        "tensorflow: needs TensorFlow itself (tf.function, SavedModel, tf.data); skipped when "
        "the tests run on another Keras backend (tests/test_backends.py)",
    )


def _on_this_backend(item) -> bool:
    marker = item.get_closest_marker("backends")
    return marker is None or keras.backend.backend() in marker.args


TORCH_TESTS = "LAMBDA_KERAS_TORCH_TESTS"
"""``required``: a ``torch``-marked test whose packages are missing fails instead of skipping."""


def pytest_runtest_setup(item):
    """A ``torch``-marked test skips without its packages, or fails where they are required."""
    marker = item.get_closest_marker("torch")
    if marker is None:
        return
    missing = [name for name in ("torch", *marker.args) if importlib.util.find_spec(name) is None]
    if not missing:
        return
    message = (
        f"needs {', '.join(missing)} (torch, torchvision, timm: pip install -e '.[test-torch]')"
    )
    if os.environ.get(TORCH_TESTS) == "required":
        pytest.fail(f"{message} ({TORCH_TESTS}=required)", pytrace=False)
    pytest.skip(message)


# Started first: one long test (a whole child pytest on JAX) that would otherwise come last,
# alone on one worker, while the other idles.
FIRST_MODULES = ("tests/test_backends.py",)


def pytest_collection_modifyitems(config, items):
    """Deselect the tests of other backends, skip TensorFlow-only tests on other backends;
    order the modules as pytest-xdist's loadscope would (most tests first,
    ``--no-loadscope-reorder`` keeps this order), except ``FIRST_MODULES``."""
    elsewhere = [item for item in items if not _on_this_backend(item)]
    if elsewhere:
        config.hook.pytest_deselected(items=elsewhere)
        items[:] = [item for item in items if _on_this_backend(item)]
    if keras.backend.backend() != "tensorflow":
        skip = pytest.mark.skip(
            reason=f"needs the TensorFlow backend, not {keras.backend.backend()}"
        )
        for item in items:
            if "tensorflow" in item.keywords:
                item.add_marker(skip)
    counts = {}
    for item in items:
        counts[item.nodeid.split("::")[0]] = counts.get(item.nodeid.split("::")[0], 0) + 1

    def order(item):
        module = item.nodeid.split("::")[0]
        return (module not in FIRST_MODULES, -counts[module], module)

    items.sort(key=order)  # stable: each module keeps its own order


def pytest_xdist_auto_num_workers(config):
    """``-n auto``: one worker per core, at most 4 (each imports TensorFlow and trains models:
    a few GB of memory apiece)."""
    return max(1, min(os.cpu_count() or 1, 4))
