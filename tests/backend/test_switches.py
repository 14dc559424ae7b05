"""The on/off environment variables: every spelling of on and off, further names, the default,
and a ValueError that names the variable, the value and what is allowed."""

import pytest

from lambda_keras.backend import torch_compiled_step
from lambda_keras.backend.switches import OFF, ON, read_switch

NAME = "LAMBDA_KERAS_SOMETHING"


@pytest.mark.parametrize("value", [*ON, "ON", " True ", "1\n"])
def test_on(value):
    assert read_switch({NAME: value}, NAME, "0", "1 or 0") is True


@pytest.mark.parametrize("value", [*OFF, "OFF", " False", "0 "])
def test_off(value):
    assert read_switch({NAME: value}, NAME, "1", "1 or 0") is False


def test_unset_reads_the_default():
    assert read_switch({}, NAME, "1", "1 or 0") is True
    assert read_switch({}, NAME, "0", "1 or 0") is False
    assert read_switch({}, NAME, "auto", "auto, 1 or 0", names=("auto",)) == "auto"


def test_a_further_name_comes_back_lower_case():
    assert read_switch({NAME: "Max-Autotune"}, NAME, "1", "...", ("max-autotune",)) == (
        "max-autotune"
    )


@pytest.mark.parametrize("value", ["yes", "2", "", "auto"])
def test_anything_else_is_refused_with_the_variable_the_value_and_the_choices(value):
    with pytest.raises(ValueError) as error:
        read_switch({NAME: value}, NAME, "1", "1 (this) or 0 (that)")
    assert str(error.value) == f"{NAME}={value!r}: expected 1 (this) or 0 (that)."


def test_the_compile_switch_reads_this_way():
    """``LAMBDA_KERAS_TORCH_COMPILE`` takes ``false`` and refuses a word it does not know (the
    other variables' spellings: tests/backend/test_glibc_heap.py and
    tests/backend/test_torch_channels_last.py)."""
    assert torch_compiled_step.compile_mode({torch_compiled_step.VARIABLE: "false"}, "cuda") is None
    with pytest.raises(ValueError, match="LAMBDA_KERAS_TORCH_COMPILE='yes'"):
        torch_compiled_step.compile_mode({torch_compiled_step.VARIABLE: "yes"}, "cpu")
