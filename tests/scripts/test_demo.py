"""scripts/demo.py: the demo trains on real digits, agrees across implementations, saves."""

import pytest

from tests.script_flags import load_script

demo = load_script("demo")


@pytest.mark.slow  # a developer's demo; the README's main job is tested in the default run
@pytest.mark.end_to_end
def test_demo_trains_and_saves(tmp_path, capsys):
    accuracy = demo.main(["--epochs", "8", "--output_dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert accuracy > 0.9
    assert "reloaded predictions identical: True" in out
    for impl in ("einsum", "conv", "depthwise"):
        line = next(li for li in out.splitlines() if li.startswith(f"implementation='{impl}'"))
        assert float(line.rsplit(" ", 1)[1]) < 1e-5
    assert (tmp_path / "lambda_digits.keras").exists()
    assert (tmp_path / "saved_model" / "saved_model.pb").exists()
