"""The drift diagnostic behind ``crafted_check``'s scale (``experiments/crafted_check_drift.py``):
its bad input, and on real molecules that training grows the logits' map first."""

import importlib.util
import os
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "experiments" / "crafted_check_drift.py"
_spec = importlib.util.spec_from_file_location("crafted_check_drift", SCRIPT)
script = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(script)


def test_bad_input_exits_2(capsys):
    assert script.main(["--steps", "0"]) == 2
    assert "--steps and --batch-size must be >= 1" in capsys.readouterr().err
    assert script.main(["--lr", "-1"]) == 2


@pytest.mark.skipif(not os.environ.get("FEDGRAPH_DATA_ROOT"), reason="needs the real Tox21 (FEDGRAPH_DATA_ROOT)")
def test_training_grows_the_logits_map_and_the_rescaling_shrinks_the_read_layers():
    rows = dict(script.measure([30], lr=0.1, batch_size=32))
    start, trained = rows["initialisation"], rows["honest, 30 steps"]
    crafted = rows["rescaled_layers of the 30-step model"]
    assert all(abs(r - 1) < 0.05 for r in start.values())
    assert trained["classifier.4"] > 1.2  # the logits' map grows first
    assert all(abs(trained[n] - 1) < 0.05 for n in ("convs.0.lin", "convs.1.lin", "classifier.0"))
    assert all(crafted[n] < 0.5 for n in ("convs.0.lin", "convs.1.lin", "classifier.0"))
