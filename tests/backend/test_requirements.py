"""What the project needs installed (lambda_keras/backend/requirements.py): a PyTorch older than
the floor is refused when ``lambda_keras`` is imported on Keras' PyTorch backend, naming the
version it needs; the ``[torch]`` extra asks for that floor."""

import importlib.metadata
import subprocess
import sys

import pytest

from lambda_keras.backend import requirements
from tests.backend import child_env


@pytest.mark.parametrize("installed", ["2.10.1", "2.9.0+cu128", "1.13.1", "2.10.0a0+81ea7a4"])
def test_an_older_pytorch_is_refused_naming_both_versions(installed):
    with pytest.raises(ImportError) as error:
        requirements.require_torch_floor(installed)
    message = str(error.value)
    assert f"needs PyTorch >= {requirements.TORCH_FLOOR}; installed: {installed}" in message
    assert "pip install 'lambda-keras[torch]'" in message


@pytest.mark.parametrize(
    "installed", ["2.11.0", "2.11.0+cu130", "2.11.0a0+81ea7a4", "2.15.0", "3.0.0.dev20270101"]
)
def test_the_floor_and_newer_pass(installed):
    requirements.require_torch_floor(installed)


def test_the_torch_extras_ask_for_the_floor():
    """setup.py reads the floors from requirements.py: the installed package's ``[torch]``
    extra asks for them at least, CI's ``[test-torch]`` for exactly them."""
    wanted = set(importlib.metadata.requires("lambda-keras"))
    torch, torchvision = requirements.TORCH_FLOOR, requirements.TORCHVISION_FLOOR
    for extra, bound in (("torch", ">="), ("test-torch", "==")):
        for name, floor in (("torch", torch), ("torchvision", torchvision)):
            assert f'{name}{bound}{floor}; extra == "{extra}"' in wanted, sorted(wanted)


@pytest.mark.torch
def test_importing_lambda_keras_on_an_older_pytorch_says_which_it_needs():
    script = "import torch; torch.__version__ = '2.10.0'; import lambda_keras"
    done = subprocess.run(
        [sys.executable, "-c", script], env=child_env("torch"), capture_output=True, text=True
    )
    assert done.returncode != 0
    assert (
        f"ImportError: lambda_keras on Keras' PyTorch backend needs PyTorch >= "
        f"{requirements.TORCH_FLOOR}; installed: 2.10.0" in done.stderr
    )
