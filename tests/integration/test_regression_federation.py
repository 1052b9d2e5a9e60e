"""A regression federation through Flower on FreeSolv's real targets (real data: CI only)."""


import pytest

from fedgraph_sim.config import load_config
from fedgraph_sim.rows.store import read_rows
from fedgraph_sim.runtime.simulation import run
from fedgraph_sim.utility import read_utility

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("local_ray")]  # one Ray for the session


def test_freesolv_regression_round_scores_rmse_and_target_errors(tmp_path, data_root):
    config = load_config(None, [
        "data.dataset=FreeSolv", "data.task_type=regression", "data.subset=60", "data.test_fraction=0.2",
        "federation.num_clients=2", "attack.clients=[0]", "attack.names=[dlg, tableak, aux_mean_adjacency]",
        "attack.params.dlg={optimizer: adam, lr: 0.1, iterations: 20}", f"output.dir={tmp_path}"])
    assert config.train.loss == "mse"
    run_dir = run(config).run_dir
    utility = read_utility(run_dir)
    assert all("test_rmse" in u and "test_r2" in u and "test_accuracy" not in u for u in utility)
    rows = {r["attack"]: r for r in read_rows(run_dir)}
    assert rows["tableak"]["status"] == "not_applicable"
    assert rows["dlg"]["status"] == "ok" and isinstance(rows["dlg"]["label_true"], float)
    assert rows["dlg"]["label_correct"] is None and rows["dlg"]["label_error"] >= 0
