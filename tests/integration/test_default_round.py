"""The main job as a new user runs it: `python experiments/run_round.py`, nothing else given, on
MUTAG. It must show the bench's headline: the server rebuilds at least one client graph exactly."""

import importlib.util
from pathlib import Path

import pytest

from fedgraph_sim.report.headline import exact_counts
from fedgraph_sim.results import read_rows

SCRIPT = Path(__file__).resolve().parents[2] / "experiments" / "run_round.py"


@pytest.mark.slow
@pytest.mark.realdata
def test_the_default_round_shows_an_exact_reconstruction_drawn_beside_the_truth(data_root, tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("run_round", SCRIPT)
    run_round = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run_round)
    assert run_round.main([f"output.dir={tmp_path}"]) == 0
    out = capsys.readouterr().out
    (run_dir,) = tmp_path.glob("*-default")  # beside Flower's home (.flwr)
    rows = read_rows(run_dir)
    exact, attacked = exact_counts(rows)["grain"]
    assert attacked == 4 and exact >= 1
    assert f"The server reconstructed {exact} of the 4 attacked graphs exactly" in out
    assert (run_dir / "drawings" / "grain_exact.png").is_file()
    # no runaway value among the attacks' means (a diverged optimisation prints 1e5 feature MSE)
    assert all(r["identity_feature_mse"] < 10 for r in rows if "identity_feature_mse" in r)
    # no prior builds a graph exactly: the exact ones came from the update
    assert all(r.get("gsm_full_iso") != 1.0 for r in rows
               if r["attack"] in ("majority_type", "aux_mean_adjacency", "aux_sample"))


def _timing(key: str) -> bool:
    return "seconds" in key or "time" in key


@pytest.mark.slow
@pytest.mark.realdata
def test_the_boundary_changes_no_result(data_root, tmp_path):
    """The default round's rows, all fields but timings, are the same whether the attack workers
    run in the sandbox's namespaces (the default) or as plain processes."""
    from fedgraph_sim.runtime.cli import main

    rows = {}
    for boundary in ("namespaces", "process"):
        assert main(["run", f"output.dir={tmp_path / boundary}", f"attack.boundary={boundary}"]) == 0
        (run_dir,) = (tmp_path / boundary).glob("*-default")
        rows[boundary] = [{k: v for k, v in r.items() if not _timing(k)} for r in read_rows(run_dir)]
    assert rows["namespaces"] == rows["process"] and len(rows["process"]) > 10
