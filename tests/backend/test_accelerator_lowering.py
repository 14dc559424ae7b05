"""The TPU road stays open: the training and predict steps of a zoo model, of a Mask R-CNN on a
LambdaResNet and of torchvision's Mask R-CNN lower for TPUs and GPUs on this CPU
(``jax.export``, Keras on JAX in a child process, tiny sizes): static shapes, no host callback,
no CPU-only custom call (``tests/backend/accelerator_lowering.py``)."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from tests.backend import child_env

SCRIPT = Path(__file__).with_name("accelerator_lowering.py")
ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("jax") is None, reason="jax lowers the steps (the [jax] extra)"
)


def run_on_jax(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        timeout=900,
        env=child_env("jax"),
        cwd=ROOT,
    )


@pytest.mark.end_to_end  # three whole models' steps exported (the refusals below stay quick)
def test_training_and_predict_steps_lower_for_tpu_and_gpu():
    done = run_on_jax(str(SCRIPT))
    assert done.returncode == 0, done.stderr[-4000:]
    lowered = {
        tuple(line.split()[1:4]) for line in done.stdout.splitlines() if line.startswith("lowered ")
    }
    models = ("lambda_resnet50", "maskrcnn_lambda_resnet50", "maskrcnn_resnet50_fpn")
    steps = ("train_step", "predict_step")
    assert lowered == {(model, step, "tpu,cuda") for model in models for step in steps}


@pytest.mark.parametrize(
    "step, refused",
    [
        # A host callback: jax.export refuses it for another platform.
        (
            "lambda x: jax.pure_callback(np.sin, jax.ShapeDtypeStruct(x.shape, x.dtype), x)",
            "python_callback",
        ),
        ("lambda x: x[x > 0]", "NonConcreteBooleanIndexError"),  # a shape known at run time
    ],
    ids=["host_callback", "dynamic_shape"],
)
def test_a_step_that_cannot_run_on_an_accelerator_is_refused(step, refused):
    """The check can fail: what a TPU cannot run stops the lowering."""
    code = (
        "import jax, numpy as np\n"
        "from tests.backend.accelerator_lowering import lower\n"
        f"lower({step}, np.ones(3, 'float32'))\n"
    )
    done = run_on_jax("-c", code)
    assert done.returncode != 0 and refused in done.stderr, done.stderr[-2000:]
