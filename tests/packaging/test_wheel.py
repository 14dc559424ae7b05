"""The wheel works away from the repository: every data file the package reads is inside it."""

import shutil
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Run in the clean venv, from a folder outside the checkout.
CHECK = textwrap.dedent(
    """
    import sys
    from pathlib import Path

    import numpy as np

    import lambda_keras
    from lambda_keras import zoo
    from lambda_keras.detection.torchvision.categories import coco_class_categories
    from lambda_keras.zoo.applications import decode_predictions, imagenet_classes

    here = Path(lambda_keras.__file__).resolve()
    assert Path(sys.prefix).resolve() in here.parents, here  # the wheel's copy, not the checkout
    model = zoo.LambdaResNet50(weights=None, input_shape=(64, 64, 3), width_multiplier=0.25)
    assert model.output.shape == (None, 1000)
    assert "lambda_resnet50" in zoo.list_models() and zoo.registered_weights()
    categories = coco_class_categories()
    assert categories[0]["name"] == "person" and len(categories) == 90
    assert len(imagenet_classes()) == 1000
    scores = np.zeros((1, 1000), "float32")
    scores[0, 1] = 1.0
    print(decode_predictions(scores, top=1)[0][0][:2], len(categories))
    """
)


def _build_wheel(folder: Path) -> Path:
    command = [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-w", str(folder)]
    try:
        import setuptools  # noqa: F401  (the venv's own: no download)

        command.append("--no-build-isolation")
    except ImportError:
        pass
    subprocess.run(command, check=True, capture_output=True, text=True, cwd=folder)
    (wheel,) = folder.glob("lambda_keras-*.whl")
    return wheel


@pytest.mark.end_to_end
def test_the_wheel_works_outside_the_checkout(tmp_path):
    wheel = _build_wheel(tmp_path)
    names = zipfile.ZipFile(wheel).namelist()
    assert "lambda_keras/zoo/imagenet_classes.tsv" in names
    assert not [
        n for n in names if n.startswith(("tests/", "scripts/", "training/", "benchmarks/"))
    ]
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    # The dependencies come from this environment's site-packages, put on the path without its
    # .pth files (so the editable install of the checkout is not on it).
    packages = sysconfig.get_paths()["purelib"]
    venv_site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    Path(venv_site, "dependencies.pth").write_text(packages + "\n")
    subprocess.run(
        [str(python), "-m", "pip", "install", "--no-deps", "--no-index", str(wheel)],
        check=True,
        capture_output=True,
    )
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    result = subprocess.run(
        [str(python), "-c", CHECK],
        cwd=outside,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "TF_CPP_MIN_LOG_LEVEL": "2", "HOME": str(tmp_path)},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "('n01443537', 'goldfish') 90" in result.stdout
    shutil.rmtree(venv)
