"""Architecture fidelity: parameter and FLOP counts against the paper's tables. The quick tier
measures the ResNet-50 placement study (Tables 3, 8 and 12) and MobileNetV2's rows (Table 17,
the FLOP counts); the end-to-end tier the deep models of Tables 13 and 15 and the whole table
on the zoo page."""

from pathlib import Path

import pytest

from lambda_keras.zoo import paper_table

ZOO_PAGE = (Path(__file__).resolve().parents[2] / "docs" / "zoo.md").read_text()

QUICK_MODELS = ("resnet50", "mobilenet_v2", "lambda_mobilenet_v2")
QUICK = [row for row in paper_table.PAPER if row.model in QUICK_MODELS]
DEEP = [row for row in paper_table.PAPER if row.model not in QUICK_MODELS]


@pytest.fixture(scope="module")
def measured():
    """``measured(rows)``: each row's measurement, each model built once in the module."""
    found = {}

    def measure(rows):
        for row in rows:
            if row.label not in found:
                found[row.label] = paper_table.measure(row)
        return [found[row.label] for row in rows]

    return measure


def assert_parameters_match(results):
    for result in results:
        row = result["row"]
        error = abs(result["params_m"] - row.params_m) / row.params_m
        assert error <= paper_table.PARAMS_TOLERANCE, (row.label, result["params_m"], row.params_m)


def test_parameter_counts_match_the_paper(measured):
    assert_parameters_match(measured(QUICK))


@pytest.mark.end_to_end  # ResNet-RS and LambdaResNets 101 to 200 at 224x224
def test_the_deep_models_parameter_counts_match_the_paper(measured):
    assert DEEP
    assert_parameters_match(measured(DEEP))


def test_flop_counts_match_the_paper(measured):
    checked = [r for r in measured(QUICK) if r["row"].flops_m is not None]
    # every row the paper gives FLOPs for is measured here, in the quick tier
    assert [r["row"] for r in checked] == [r for r in paper_table.PAPER if r.flops_m is not None]
    assert len(checked) == 2
    for result in checked:
        row = result["row"]
        error = abs(result["flops_m"] - row.flops_m) / row.flops_m
        assert error <= paper_table.FLOPS_TOLERANCE, (row.label, result["flops_m"], row.flops_m)


@pytest.mark.end_to_end  # every row built
def test_readme_shows_the_generated_table(measured):
    assert paper_table.markdown(measured(paper_table.PAPER)) in ZOO_PAGE
