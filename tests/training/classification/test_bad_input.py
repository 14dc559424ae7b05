"""Bad flags and files of the scripts: one line naming the mistake, before any model is built.

Flag mistakes are absl's ``FATAL Flags parsing error: ...`` (exit 1): each case is parsed in
process (the script's ``define_flags`` on a fresh ``FlagValues``), and one run of the script
proves the wiring. Mistakes found in the data are ``error: ...`` (exit 2), run as scripts.
"""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from lambda_keras.training.classification import data
from tests.script_flags import assert_refused, case_ids, load_script, parse

eval_script = load_script("eval")
export_script = load_script("export")
train_script = load_script("train")

ROOT = Path(__file__).resolve().parents[3]
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": str(ROOT)}


def run(script: str, *flags: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "scripts" / script), *flags],
        capture_output=True,
        text=True,
        env=ENV,
        cwd=cwd,
        timeout=300,
    )


TRAIN_FLAG_CASES = {
    "epochs_zero": ("--epochs=0", "--epochs must be a positive integer; received --epochs=0"),
    "epochs_negative": ("--epochs=-1", "--epochs must be a positive integer"),
    "steps_per_epoch_zero": ("--steps_per_epoch=0", "--steps_per_epoch must be a positive integer"),
    "warmup_negative": ("--warmup_epochs=-2", "--warmup_epochs must be"),
    "learning_rate_negative": (
        "--learning_rate=-0.1",
        "--learning_rate must be a positive number",
    ),
    "learning_rate_nan": ("--learning_rate=nan", "--learning_rate must be a positive number"),
    "mixup_negative": ("--mixup_alpha=-1", "--mixup_alpha must be"),
    "cutmix_negative": ("--cutmix_alpha=-0.5", "--cutmix_alpha must be"),
    "crop_area": ("--crop_min_area=1.5", "--crop_min_area must be a number in (0.0, 1.0]"),
    "crop_area_zero": ("--crop_min_area=0", "--crop_min_area must be a number in (0.0, 1.0]"),
    "batch_zero": ("--batch_size=0", "--batch_size must be a positive integer"),
    "image_size": ("--image_size=8", "--image_size must be an integer >= 32"),
    "width": ("--width_multiplier=0", "--width_multiplier must be"),
    "seed": ("--seed=-3", "--seed must be"),
    "model_typo": ("--model=lambda_resnet_50", "Did you mean 'lambda_resnet50'"),
    "folder_missing": ("--dataset=folder:/no/such/dir", "needs an existing directory"),
    "recipe": ("--recipe=100ep", "value should be one of"),
    "strategy": ("--strategy=gpu_cluster", "value should be one of"),
    "epochs_string": ("--epochs=ten", "invalid literal"),
}


@pytest.mark.parametrize("case", list(TRAIN_FLAG_CASES))
def test_train_flags(case):
    flag, message = TRAIN_FLAG_CASES[case]
    assert_refused(train_script, flag, message)


@pytest.mark.end_to_end  # runs the script
def test_train_flags_are_one_line_from_the_script(tmp_path):
    """The script's wiring: absl's one line, exit status 1, no traceback, nothing started."""
    done = run("train.py", "--epochs=0", f"--model_dir={tmp_path / 'run'}", cwd=tmp_path)
    assert done.returncode == 1, done.stderr[-1000:]
    assert "FATAL Flags parsing error" in done.stderr
    assert "--epochs must be a positive integer" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "run").exists()  # nothing started


def test_train_defaults_parse():
    flag_values = parse(train_script)
    assert flag_values.model == "lambda_resnet50" and flag_values.recipe == "90ep"


def write_images(folder: Path, classes: dict[str, int]) -> None:
    rng = np.random.default_rng(0)
    for name, count in classes.items():
        (folder / name).mkdir(parents=True)
        for i in range(count):
            pixels = rng.integers(0, 255, (12, 12, 3), dtype=np.uint8)
            (folder / name / f"{i}.png").write_bytes(tf.io.encode_png(pixels).numpy())


@pytest.mark.end_to_end  # runs the script
def test_single_class_folder_is_an_error(tmp_path):
    write_images(tmp_path / "data" / "train", {"cats": 4})
    done = run("train.py", f"--dataset=folder:{tmp_path / 'data'}", cwd=tmp_path)
    assert done.returncode == 2 and "error:" in done.stderr
    assert "has 1 class folder(s)" in done.stderr and "at least 2" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.end_to_end  # runs the script
def test_batch_larger_than_the_data_set(tmp_path):
    done = run("train.py", "--batch_size=5000", f"--model_dir={tmp_path / 'run'}", cwd=tmp_path)
    assert done.returncode == 2
    assert "--batch_size=5000 is larger than the training split (1437 images" in done.stderr


def test_damaged_images_are_skipped_with_their_paths(tmp_path, capsys):
    root = tmp_path / "data"
    write_images(root, {"a": 3, "b": 3})
    good = (root / "a" / "0.png").read_bytes()
    (root / "a" / "cut.png").write_bytes(good[: len(good) // 2])  # truncated
    (root / "b" / "fake.jpg").write_bytes(b"this is text, not a JPEG")
    jpeg = tf.io.encode_jpeg(np.zeros((8, 8, 3), np.uint8)).numpy()
    (root / "b" / "cut.jpg").write_bytes(jpeg[:-10])
    source = data.folder_source(str(root))
    printed = capsys.readouterr().out
    assert source.num_examples == 6
    assert "Skipped 3 damaged or truncated image file(s)" in printed
    for name in ("cut.png", "fake.jpg", "cut.jpg"):
        assert name in printed
    assert len(list(source.dataset)) == 6  # every kept file decodes


def test_evaluation_says_how_many_images_it_scored_and_skipped(tmp_path, capsys):
    import keras

    from lambda_keras.training.classification.evaluation import evaluate

    root = tmp_path / "data"
    write_images(root, {"a": 3, "b": 2})
    (root / "b" / "cut.png").write_bytes((root / "a" / "0.png").read_bytes()[:40])
    model = keras.Sequential(
        [keras.Input((32, 32, 3)), keras.layers.GlobalAveragePooling2D(), keras.layers.Dense(2)]
    )
    model.save(tmp_path / "two.keras")
    result = evaluate(str(tmp_path / "two.keras"), data.folder_source(str(root)), image_size=32)
    assert (result["examples"], result["skipped"]) == (5, 1)
    assert "cut.png" in capsys.readouterr().out  # the path, where the data is read
    line = eval_script.result_line("two.keras", "folder/test", result)
    assert "(5 images; 1 damaged file(s) skipped, listed above): top-1" in line
    clean = eval_script.result_line("two.keras", "digits/test", {**result, "skipped": 0})
    assert "(5 images): top-1" in clean


def test_a_training_run_says_how_many_damaged_files_each_split_left_out(tmp_path):
    """The run's inputs count each split's damaged files, and its last line says so (the line
    a run prints is ``result_line``'s: ``_finish`` prints nothing else)."""
    from lambda_keras.training.classification import ClassificationConfig, make_inputs, recipes
    from lambda_keras.training.classification.evaluation import result_line

    root = tmp_path / "data"
    write_images(root / "train", {"a": 4, "b": 4})
    write_images(root / "test", {"a": 2, "b": 2})
    (root / "train" / "b" / "cut.png").write_bytes(
        (root / "train" / "a" / "0.png").read_bytes()[:40]
    )
    config = ClassificationConfig(
        dataset=f"folder:{root}", batch_size=4, model_dir=str(tmp_path / "run")
    )
    inputs = make_inputs(config, recipes.RECIPES[config.recipe])
    assert inputs.skipped == {"train": 1, "test": 0} and inputs.train.num_examples == 8
    result = {"top1": 0.5, "top5": 1.0, "train_seconds": 12.2, "steps": 3}
    line = result_line("test", {**result, "skipped": inputs.skipped})
    assert line == (
        "test top-1 0.5000, top-5 1.0000 (13 s of training, 3 steps; damaged image files "
        "skipped: 1 of train, 0 of test, listed above)"
    )
    clean = result_line("test", {**result, "skipped": {"train": 0, "test": 0}})
    assert clean == "test top-1 0.5000, top-5 1.0000 (13 s of training, 3 steps)"


@pytest.mark.end_to_end  # runs the script
def test_eval_with_another_number_of_classes(tmp_path):
    import keras

    model = keras.Sequential(
        [keras.Input((32, 32, 3)), keras.layers.GlobalAveragePooling2D(), keras.layers.Dense(4)]
    )
    model.save(tmp_path / "four.keras")
    done = run("eval.py", f"--model_path={tmp_path / 'four.keras'}", cwd=tmp_path)
    assert done.returncode == 2
    assert "predicts 4 classes but the data set has 10" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.end_to_end  # runs the script
@pytest.mark.parametrize("content", [b"", b"PK\x03\x04 truncated zip"])
def test_eval_and_export_of_a_damaged_keras_file(tmp_path, content):
    damaged = tmp_path / "damaged.keras"
    damaged.write_bytes(content)
    done = run("eval.py", f"--model_path={damaged}", cwd=tmp_path)
    assert done.returncode == 2 and "is damaged or truncated" in done.stderr
    done = run(
        "export.py", f"--model_path={damaged}", f"--export_dir={tmp_path / 'x'}", cwd=tmp_path
    )
    assert done.returncode == 1 and "is damaged or truncated" in done.stderr
    assert "Traceback" not in done.stderr


SCRIPT_FLAG_CASES = [
    (eval_script, "--crop_fraction=0", "--crop_fraction must be a number in (0.0, 1.0]"),
    (eval_script, "--batch_size=0", "--batch_size must be a positive integer"),
    (eval_script, "--image_size=16", "--image_size must be >= 32"),
    (export_script, "--crop_fraction=2", "--crop_fraction must be a number in (0.0, 1.0]"),
    (export_script, "--image_size=8", "--image_size must be >= 32"),
]


@pytest.mark.parametrize(
    "script, flag, message",
    SCRIPT_FLAG_CASES,
    ids=case_ids(SCRIPT_FLAG_CASES),
)
def test_eval_and_export_flags(script, flag, message):
    assert_refused(script, flag, message)


@pytest.mark.end_to_end  # runs the script
def test_eval_and_export_flags_are_one_line_from_the_scripts(tmp_path):
    for script, flag, message in (
        ("eval.py", "--crop_fraction=0", "--crop_fraction must be a number in (0.0, 1.0]"),
        ("export.py", "--crop_fraction=2", "--crop_fraction must be a number in (0.0, 1.0]"),
    ):
        done = run(script, flag, cwd=tmp_path)
        assert done.returncode == 1 and "FATAL Flags parsing error" in done.stderr, done.stderr
        assert message in done.stderr and "Traceback" not in done.stderr


def test_dataset_typo_without_tfds_says_what_the_name_is(monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorflow_datasets", None)  # as if not installed
    with pytest.raises(ValueError, match="--dataset='digitz' is neither 'digits' nor 'folder"):
        data.load_source("digitz", "train", image_size=32)


DATASET_CASES = {
    "image_size": (dict(image_size=-1), "`image_size` must be a positive integer"),
    "batch": (dict(global_batch_size=0), "`global_batch_size` must be a positive integer"),
    "crop_fraction": (dict(crop_fraction=1.5), r"`crop_fraction` must be a number in \(0.0, 1.0\]"),
    "crop_scale_order": (
        dict(crop_scale=(0.5, 0.2)),
        r"min <= max; received crop_scale=\(0.5, 0.2\)",
    ),
    "crop_scale_zero": (dict(crop_scale=(0.0, 1.0)), "`crop_scale` must be a number in"),
    "crop_scale_scalar": (dict(crop_scale=0.5), r"`crop_scale` must be \(min, max\)"),
    "randaugment": (dict(randaugment_magnitude=50), r"`randaugment_magnitude`.*\[0.0, 30.0\]"),
    "mixup": (dict(mixup_alpha=-1.0), "`mixup_alpha` must be a number in"),
    "cutmix_nan": (dict(cutmix_alpha=float("nan")), "`cutmix_alpha`"),
    "shuffle_buffer": (dict(shuffle_buffer=0), "`shuffle_buffer` must be a positive integer"),
}


@pytest.mark.parametrize("case", list(DATASET_CASES))
def test_make_dataset_arguments(case):
    kwargs, message = DATASET_CASES[case]
    source = data.digits_source("test", image_size=32)
    arguments = dict(training=True, image_size=32, global_batch_size=8)
    with pytest.raises(ValueError, match=message):
        data.make_dataset(source, **{**arguments, **kwargs})


def test_load_source_arguments():
    with pytest.raises(ValueError, match="`image_size` must be a positive integer"):
        data.load_source("digits", "train", image_size=0)
    with pytest.raises(TypeError, match="`dataset` must be 'digits', 'folder:<root>'"):
        data.load_source(None, "train")


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (dict(image_size=0), ValueError, "`image_size` must be a positive integer"),
        (dict(crop_fraction=0.0), ValueError, "`crop_fraction` must be a number in"),
        (dict(model="model.keras"), TypeError, "`model` must be a keras.Model; received str"),
        (dict(path=3), TypeError, "`path` must be a directory path"),
    ],
)
def test_export_for_serving_arguments(tmp_path, kwargs, error, message):
    import keras

    from lambda_keras.zoo.serving import export_for_serving

    model = keras.Sequential(
        [keras.Input((8, 8, 3)), keras.layers.Flatten(), keras.layers.Dense(2)]
    )
    arguments = dict(model=model, path=str(tmp_path / "sv"), image_size=8)
    with pytest.raises(error, match=message):
        export_for_serving(**{**arguments, **kwargs})
    assert not (tmp_path / "sv").exists()


def test_splits_with_other_class_folders_are_refused(tmp_path):
    """Each split of a folder data set is labelled by its own sorted class folders: a test
    split without "b" would score "c" images as "b". Refused, naming the classes."""
    from lambda_keras.training.classification import ClassificationConfig, make_inputs, recipes

    root = tmp_path / "data"
    write_images(root / "train", {"a": 2, "b": 2, "c": 2})
    write_images(root / "test", {"a": 1, "c": 1})
    config = ClassificationConfig(dataset=f"folder:{root}", batch_size=2)
    with pytest.raises(ValueError, match=r"only in 'train': \['b'\]; only in 'test': \[\]"):
        make_inputs(config, recipes.RECIPES[config.recipe])
    write_images(root / "test", {"b": 1})  # the same class folders: accepted
    assert make_inputs(config, recipes.RECIPES[config.recipe]).train.class_names == ["a", "b", "c"]
