"""Training runs: a short run in process, argument errors, and a run killed with SIGKILL."""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lambda_keras.labels_file import read_labels
from lambda_keras.training.classification import ClassificationConfig, build_model, recipes, train
from lambda_keras.training.classification.data import load_source
from lambda_keras.training.classification.evaluation import evaluate
from lambda_keras.training.distribute import PlacementConfig
from tests.training_log import logged

ROOT = Path(__file__).resolve().parents[3]
TINY = dict(width_multiplier=0.125, image_size=32, batch_size=64, verbose=0)


def epochs_logged(model_dir):
    return [int(epoch) for epoch in logged(model_dir, "epoch")]


@pytest.fixture(scope="module")
def short_run(tmp_path_factory):
    """Two epochs with MixUp and CutMix on, evaluated and exported: shared by the tests of what
    a run writes and of the eval/export scripts that read it."""
    model_dir = tmp_path_factory.mktemp("short_run")
    result = train(
        ClassificationConfig(
            model_dir=str(model_dir), epochs=2, mixup_alpha=0.2, cutmix_alpha=1.0, **TINY
        )
    )
    return model_dir, result


@pytest.mark.end_to_end
def test_short_run_trains_evaluates_and_exports(short_run):
    tmp_path, result = short_run
    assert result["steps"] == 2 * (1437 // 64)
    assert result["skipped"] == {"train": 0, "test": 0}  # the digits hold no damaged file
    assert 0.0 <= result["top1"] <= result["top5"] <= 1.0
    assert epochs_logged(tmp_path) == [0, 1]
    assert (Path(result["saved_model"]) / "saved_model.pb").exists()
    assert read_labels(str(tmp_path))["class_names"][:2] == ["0", "1"]
    # eval.py's function: the .keras file and the SavedModel agree with the trainer.
    source = load_source("digits", "test")
    by_keras = evaluate(result["keras"], source, image_size=32)
    by_saved_model = evaluate(result["saved_model"], source, image_size=32)
    assert by_keras["examples"] == by_saved_model["examples"] == 360
    assert by_keras["top1"] == pytest.approx(result["top1"], abs=1e-6)
    assert by_saved_model["top1"] == pytest.approx(result["top1"], abs=1e-6)
    # The per-epoch checkpoint (the last epoch's weights, before the EMA is swapped in).
    assert evaluate(str(tmp_path / "checkpoint.keras"), source, image_size=32)["examples"] == 360
    with pytest.raises(ValueError, match="model_path"):
        evaluate(str(tmp_path), source, image_size=32)


@pytest.mark.end_to_end
def test_eval_and_export_scripts(short_run, tmp_path):
    """export.py serves the run's .keras file, eval.py scores the SavedModel it wrote."""
    run_dir, result = short_run
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    export = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "export.py"),
            f"--model_path={result['keras']}",
            f"--export_dir={tmp_path / 'served'}",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert export.returncode == 0, export.stderr[-2000:]
    assert "at 32x32, crop 0.875" in export.stdout
    evaluation = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "eval.py"), f"--model_path={tmp_path / 'served'}"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert evaluation.returncode == 0, evaluation.stderr[-2000:]
    assert "(360 images): top-1" in evaluation.stdout
    top1 = float(re.search(r"top-1 ([\d.]+)", evaluation.stdout)[1])
    assert top1 == pytest.approx(result["top1"], abs=1e-4)  # the same model, served


@pytest.mark.parametrize(
    "recipe,model,image_size,dropout,drop_path",
    [
        ("90ep", "lambda_resnet50", 32, 0.0, 0.0),  # App. F.3: no dropout, no stochastic depth
        ("350ep", "lambda_resnet152", 224, 0.3, 0.1),  # Table 20
        ("350ep", "resnet_rs50", 160, 0.2, 0.0),
    ],
)
def test_recipe_sets_dropout_and_stochastic_depth(recipe, model, image_size, dropout, drop_path):
    import keras

    from lambda_keras.layers import StochasticDepth

    config = ClassificationConfig(
        model=model, recipe=recipe, image_size=image_size, width_multiplier=0.125
    )
    built = build_model(config, 10, recipes.RECIPES[recipe])
    rates = [layer.rate for layer in built.layers if isinstance(layer, keras.layers.Dropout)]
    assert rates == ([dropout] if dropout else [])  # no Dropout layer at rate 0
    drop_rates = [layer.rate for layer in built.layers if isinstance(layer, StochasticDepth)]
    assert max(drop_rates, default=0.0) == pytest.approx(drop_path)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(recipe="10ep"), "`recipe` must be one of"),
        (dict(model="lambda_resnet_50"), "Unknown model"),
        (dict(mixed_precision="int8"), "`mixed_precision` must be one of"),
        (dict(batch_size=0), "`batch_size` must be a positive integer"),
        # TensorFlow's own checks; on JAX and PyTorch a TensorFlow strategy is refused first
        # (tests/training/classification/test_jax_training.py).
        pytest.param(
            dict(placement=PlacementConfig(strategy="tpu")), "--tpu", marks=pytest.mark.tensorflow
        ),
        pytest.param(
            dict(placement=PlacementConfig("multi_worker"), loop="fit"),
            "keras-team/keras#20585",
            marks=pytest.mark.tensorflow,
        ),
        (dict(loop="keras"), "`loop` must be one of"),
    ],
)
def test_bad_arguments(tmp_path, kwargs, match):
    with pytest.raises(ValueError, match=match):
        train(ClassificationConfig(model_dir=str(tmp_path), **{**TINY, **kwargs}))


@pytest.mark.end_to_end
# The custom loop's resume is the same BackupAndRestore callback: its kill runs under -m slow
# (and the killed two-worker run, also slow, resumes it across processes).
# On JAX (fit, BackupAndRestore, two CPU devices under keras.distribution) also under -m slow.
@pytest.mark.parametrize(
    "loop",
    [
        "fit",
        pytest.param("custom", marks=pytest.mark.slow),
        pytest.param("jax", marks=pytest.mark.slow),
    ],
)
def test_killed_run_resumes_from_its_last_checkpoint(tmp_path, loop):
    command = [
        sys.executable,
        str(ROOT / "scripts" / "train.py"),
        f"--model_dir={tmp_path}",
        "--epochs=4",
        "--width_multiplier=0.125",
        "--noexport",
        "--loop=fit" if loop == "jax" else f"--loop={loop}",
    ]
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    if loop == "jax":
        command.append("--backend=jax")
        env.pop("KERAS_BACKEND", None)
        env["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
    first = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    deadline = time.time() + 300
    while not epochs_logged(tmp_path) and time.time() < deadline and first.poll() is None:
        time.sleep(0.2)
    assert epochs_logged(tmp_path) == [0], "the first epoch never finished"
    time.sleep(0.3)  # into the second epoch, most often (an epoch takes about a second)
    first.send_signal(signal.SIGKILL)
    first.wait()
    assert first.returncode == -signal.SIGKILL
    done = epochs_logged(tmp_path)  # [0], or [0, 1] when the machine was quicker than usual
    assert done == list(range(len(done))) and len(done) < 4

    # Started again with another width: refused before a model is built, the backup untouched
    # (the script prints this error as one line, exit 2: test_bad_input.py proves that wiring).
    backup = {p.name: p.read_bytes() for p in (tmp_path / "backup").rglob("*") if p.is_file()}
    other = ClassificationConfig(
        model_dir=str(tmp_path),
        epochs=4,
        width_multiplier=0.25,
        export=False,
        loop="fit" if loop == "jax" else loop,
    )
    with pytest.raises(ValueError, match=re.escape("--width_multiplier=0.125 there, 0.25 now")):
        train(other)
    after = {p.name: p.read_bytes() for p in (tmp_path / "backup").rglob("*") if p.is_file()}
    assert after == backup and backup

    second = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
    assert second.returncode == 0, second.stderr[-3000:]
    assert epochs_logged(tmp_path) == [0, 1, 2, 3]  # resumed where it stopped, not from scratch
    assert f"{4 * (1437 // 64)} steps" in second.stdout
    if loop == "custom":
        assert "resumed from" in second.stdout and f"after epoch {len(done)}" in second.stdout


def test_the_optimizer_is_built_before_the_first_step():
    """Its slots and weight averages exist before fit: a first traced step that created them
    would be traced twice (about 10 s more per run for LambdaResNet-50)."""
    from lambda_keras.training.classification.model import compiled_model

    config = ClassificationConfig(**TINY)
    model = compiled_model(config, recipes.RECIPES["90ep"], 10, steps_per_epoch=2, epochs=1)
    assert model.optimizer.built
    paths = [v.path for v in model.optimizer.variables]
    assert any(p.endswith("_average") for p in paths)  # EMA
    assert any(p.endswith("_momentum") for p in paths)  # SGD momentum


def test_the_final_evaluation_reports_what_compiling_its_step_cost(tmp_path, monkeypatch):
    """``model.evaluate`` after ``fit`` runs a CompileReport (on PyTorch the test step compiles
    for the evaluation's batches: its seconds are printed)."""
    from types import SimpleNamespace

    from lambda_keras.backend.compile_report import CompileReport
    from lambda_keras.training.classification import trainer

    seen = {}

    class Model:
        optimizer = None

        def fit(self, *args, **kwargs):
            seen["fit"] = kwargs["callbacks"]

        def evaluate(self, batches, **kwargs):
            seen["evaluate"] = kwargs["callbacks"]
            return {"accuracy": 1.0}

    monkeypatch.setattr(trainer, "_finish", lambda config, model, metrics, *rest: metrics)
    config = SimpleNamespace(model_dir=str(tmp_path), verbose=0, batch_size=2, export=False)
    placement = SimpleNamespace(distribution=None, chief=True)
    inputs = SimpleNamespace(train_dataset=lambda: None, eval_dataset=[])
    assert trainer._train_fit(config, Model(), placement, inputs, 1, 1) == {"accuracy": 1.0}
    assert any(isinstance(callback, CompileReport) for callback in seen["fit"])
    assert [type(callback) for callback in seen["evaluate"]] == [CompileReport]
