"""The epoch-rounding diagnostic (``experiments/grain_epoch_rounding.py``): its bad input, and the
mechanism it reports on real molecules."""

import importlib.util
import os
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "experiments" / "grain_epoch_rounding.py"
_spec = importlib.util.spec_from_file_location("grain_epoch_rounding", SCRIPT)
script = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(script)


def test_bad_sizes_exit_2(capsys):
    assert script.main(["--updates", "20", "--steps", "4", "--batch-size", "2"]) == 2
    assert "at most 100" in capsys.readouterr().err
    assert script.main(["--steps", "0"]) == 2


@pytest.mark.skipif(not os.environ.get("FEDGRAPH_DATA_ROOT"), reason="needs the real Tox21 (FEDGRAPH_DATA_ROOT)")
def test_float32_rounding_loses_true_rows_the_float64_epoch_keeps():
    from fedgraph_sim.data.loaders import load_dataset
    dataset = load_dataset("Tox21", task="SR-p53", features="grain")
    victims = np.random.default_rng(42).permutation(len(dataset))[:100]
    out = script.measure(dataset, victims, updates=1, steps=4, size=2, lr=0.01)
    fedsgd, f32, f64 = out["FedSGD batch"], out["epoch, float32 client"], out["epoch, float64 client"]
    assert fedsgd["rows"] == f32["rows"] == f64["rows"] > 8
    assert fedsgd["lost"][0] == f32["lost"][0] == 0  # layer 1 reads the data itself: no drift, rounding far below
    assert f32["ranks"][1] < f64["ranks"][1]  # the rounding's floor hides directions of the 1-hop check
    assert f32["lost"][1] > 3 * max(f64["lost"][1], 1)  # ... and the true 1-hop rows along them


def test_a_scale_that_is_not_positive_exits_2(capsys):
    assert script.main(["--scale", "0"]) == 2
    assert "--scale must be > 0" in capsys.readouterr().err


@pytest.mark.skipif(not os.environ.get("FEDGRAPH_DATA_ROOT"), reason="needs the real Tox21 (FEDGRAPH_DATA_ROOT)")
def test_the_rescaled_model_keeps_the_true_rows_the_honest_epoch_loses():
    """A malicious server's ``rescaled_layers`` (the same function, the checked layers at 0.316):
    the float32 epoch keeps the 1-hop rank of the FedSGD batch and most of its true rows."""
    from fedgraph_sim.data.loaders import load_dataset
    dataset = load_dataset("Tox21", task="SR-p53", features="grain")
    victims = np.random.default_rng(42).permutation(len(dataset))[:100]
    out = script.measure(dataset, victims, updates=1, steps=4, size=2, lr=0.01, scale=0.316)
    honest, crafted = out["epoch, float32 client"], out["epoch, float32 client, rescaled_layers 0.316"]
    assert crafted["rows"] == honest["rows"] > 8
    assert crafted["ranks"][1] > honest["ranks"][1]
    assert 3 * crafted["lost"][1] < honest["lost"][1]
