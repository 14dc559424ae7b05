"""list_models / get_model."""

import pytest

from lambda_keras import zoo


def test_list_models():
    names = zoo.list_models()
    for depth in (50, 101, 152, 200, 270, 350, 420):
        assert {f"lambda_resnet{depth}", f"lambda_resnet{depth}_c4", f"resnet_rs{depth}"} <= set(
            names
        )
    assert {"resnet50", "mobilenet_v2", "lambda_mobilenet_v2"} <= set(names)
    assert {"lambda_resnet26t", "lambda_resnet26rpt_256", "lambda_resnet50ts"} <= set(names)
    assert len(names) == 27
    assert zoo.list_models("*mobilenet*") == ["lambda_mobilenet_v2", "mobilenet_v2"]


def test_get_model_passes_arguments():
    model = zoo.get_model(
        "resnet_rs50", se=False, include_top=False, pooling="avg", input_shape=(64, 64, 3)
    )
    assert model.name == "resnet_rs50_nose" and model.output.shape == (None, 2048)
    assert zoo.model_builder("lambda_resnet101_c4") is zoo.LambdaResNet101C4


def test_unknown_model_suggests_names():
    with pytest.raises(ValueError, match=r"Unknown model 'lambda_resnet_50'.*'lambda_resnet50'"):
        zoo.get_model("lambda_resnet_50")
