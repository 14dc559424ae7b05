"""Architecture fidelity: parameter and FLOP counts against the paper's tables."""

from pathlib import Path

import pytest

from lambda_keras.zoo import paper_table

ZOO_PAGE = (Path(__file__).resolve().parents[2] / "docs" / "zoo.md").read_text()


@pytest.fixture(scope="module")
def results():
    return [paper_table.measure(row) for row in paper_table.PAPER]


def test_parameter_counts_match_the_paper(results):
    for result in results:
        row = result["row"]
        error = abs(result["params_m"] - row.params_m) / row.params_m
        assert error <= paper_table.PARAMS_TOLERANCE, (row.label, result["params_m"], row.params_m)


def test_flop_counts_match_the_paper(results):
    checked = [r for r in results if r["row"].flops_m is not None]
    assert len(checked) == 2
    for result in checked:
        row = result["row"]
        error = abs(result["flops_m"] - row.flops_m) / row.flops_m
        assert error <= paper_table.FLOPS_TOLERANCE, (row.label, result["flops_m"], row.flops_m)


def test_readme_shows_the_generated_table(results):
    assert paper_table.markdown(results) in ZOO_PAGE
