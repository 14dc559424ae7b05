"""A config's CHECKS as absl validators: the flag is refused with the config's words."""

import pytest
from absl import flags

from lambda_keras import _validation as v
from lambda_keras.training.distribute import PlacementConfig
from lambda_keras.training.flag_checks import register_checks


def parsed(*argv):
    fv = flags.FlagValues()
    flags.DEFINE_string("strategy", "auto", "", flag_values=fv)
    flags.DEFINE_integer("num_processes", None, "", flag_values=fv)
    register_checks({**PlacementConfig.CHECKS, "not_a_flag": v.positive_int}, fv)
    fv(["prog", *argv])
    return fv


def test_the_config_check_refuses_the_flag_with_its_name():
    with pytest.raises(flags.IllegalFlagValueError, match="--num_processes must be a positive"):
        parsed("--num_processes=0")
    with pytest.raises(flags.IllegalFlagValueError, match="received --strategy='gpus'"):
        parsed("--strategy=gpus")


def test_allowed_values_and_unset_optional_flags_pass():
    fv = parsed("--strategy=one_device")
    assert (fv.strategy, fv.num_processes) == ("one_device", None)
