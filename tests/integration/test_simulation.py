"""A real Flower federation: run_simulation on Ray, 2 client actors, 1 round, synthetic data."""

import csv

import pytest
import yaml

from clients.defenses.accounting import client_level_epsilons
from fedgraph_sim.config import load_config
from fedgraph_sim.rows.store import has_rows, read_rows
from fedgraph_sim.runtime.simulation import run
from fedgraph_sim.utility import read_utility

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("local_ray")]  # one Ray for the session


def test_run_simulation_writes_results(tmp_path):
    config = load_config(None, [
        "data.dataset=synthetic", "data.options={num_graphs: 60}", "federation.num_clients=2",
        "attack.names=[random,idlg,inverting_gradients]", "attack.params.idlg.iterations=3",
        "attack.params.inverting_gradients.iterations=5", f"output.dir={tmp_path}"])
    result = run(config)
    run_dir = result.run_dir
    assert {p.name for p in run_dir.iterdir()} >= {"config.yaml", "results.parquet", "summary.csv",
                                                   "audit", "log.txt"}
    saved = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert saved["seed"] == 0 and "torch" in saved["versions"]
    rows = read_rows(run_dir)
    # 2 clients x 3 attacks x batch size 1
    assert len(rows) == 6
    assert {(r["client"], r["attack"]) for r in rows} == {
        (c, a) for c in (0, 1) for a in ("random", "idlg", "inverting_gradients")}
    assert all(r["status"] == "ok" for r in rows)
    for column in ("round", "client", "graph_id", "attack", "defense", "status", "seconds",
                   "identity_feature_mse", "identity_node_type_accuracy", "identity_adj_auc",
                   "identity_adj_ap", "identity_edge_accuracy", "matched_adj_auc"):
        assert column in rows[0], column
    assert all(r["label_correct"] == 1 for r in rows if r["attack"] == "idlg")
    with (run_dir / "summary.csv").open() as fh:
        summary = list(csv.DictReader(fh))
    assert {(s["attack"], s["alignment"]) for s in summary} == {
        (a, al) for a in ("random", "idlg", "inverting_gradients") for al in ("identity", "matched", "gsm")}
    assert {"feature_mse_mean", "adj_auc_std", "edge_accuracy_count"} <= set(summary[0])
    assert set(result.timings) == {"setup", "ray_and_messaging", "client_training", "attacks", "total"}
    assert (run_dir / "audit" / "round_1" / "client_1.pt").is_file()


def test_captured_federation_replays_to_attacks_with_utility_and_epsilon(tmp_path):
    from fedgraph_sim.runtime import Session, replay

    config = load_config(None, [
        "data.dataset=synthetic", "data.options={num_graphs: 60}", "data.test_fraction=0.2",
        "federation.num_clients=2", "federation.rounds=2", "attack.names=[]",
        "defenses=[{name: dp_sgd, noise_multiplier: 1.0, clip: 1.0}]", f"output.dir={tmp_path}"])
    federation = run(config, session=Session(config, capture=True), run_dir=tmp_path / "fed")
    assert not has_rows(federation.run_dir)  # capture only: no attacks ran
    utility = read_utility(federation.run_dir)
    assert [u["round"] for u in utility] == [0, 1, 2] and all(u["test_graphs"] == 12 for u in utility)

    attack_config = config.model_copy(update={"attack": config.attack.model_copy(
        update={"names": ["random", "idlg"], "params": {"idlg": {"iterations": 3}}})})
    rows = replay(attack_config, federation.run_dir, tmp_path / "cell")
    assert len(rows) == 2 * 2 * 2  # rounds x clients x attacks
    assert all(r["test_accuracy"] == utility[-1]["test_accuracy"] for r in rows)
    eps = {r["round"]: r["defense_epsilon"] for r in rows if r["client"] == 0}
    assert 0 < eps[1] < eps[2]  # the accountant's history persisted in the node state


def test_secure_aggregation_attacks_the_aggregate_of_all_clients(tmp_path):
    config = load_config(None, [
        "data.dataset=synthetic", "data.options={num_graphs: 60}", "federation.num_clients=2",
        "train.batch_size=2", "threat.secure_aggregation=true", "attack.names=[random]",
        f"output.dir={tmp_path}"])
    rows = read_rows(run(config).run_dir)
    assert len(rows) == 4  # one aggregate update scored against the 2 x 2 graphs behind it
    assert all(r["client"] == -1 and r["observed"] == "secure_aggregate" and r["batch_size"] == 4
               for r in rows)


def test_flowers_dp_mods_and_wrapper_run_in_the_federation_and_the_server_sees_clipped_replies(tmp_path):
    """Flower's LocalDpMod, then its fixedclipping_mod on the clients and its central-DP wrapper
    around the curious strategy: every update the server observes is clipped to the norm, and the
    rows carry both defenses' numbers."""
    from fedgraph_sim.capture import CaptureStore
    from fedgraph_sim.runtime import Session

    config = load_config(None, [
        "data.dataset=synthetic", "data.options={num_graphs: 60}", "federation.num_clients=2", "train.local_steps=3",
        "attack.names=[random]", f"output.dir={tmp_path}",
        "defenses=[{name: flwr_local_dp, clipping_norm: 1.0, sensitivity: 0.01, epsilon: 0.5, delta: 1.0e-5}, "
        "{name: flwr_central_dp, clipping_norm: 0.05, noise_multiplier: 1.0}]"])
    result = run(config, session=Session(config, capture=True), run_dir=tmp_path / "fed")
    updates, failures = CaptureStore(result.run_dir).read(1)
    assert len(updates) == 2 and not failures
    for update in updates:
        norm = sum(float(((update.returned[k] - update.global_weights[k]).astype("float64") ** 2).sum())
                   for k in update.returned) ** 0.5
        assert norm <= 0.05 * (1 + 1e-4), norm  # the last mod clipped; the server's noise comes later
    rows = read_rows(result.run_dir)
    assert rows and all(r["status"] == "ok" for r in rows)
    assert all(r["defense_flwr_central_dp_clipping_norm"] == 0.05 and r["defense_flwr_local_dp_noise_std"] > 0
               for r in rows)
    flower, opacus = client_level_epsilons(1.0, 2, 2, 1, 1e-5)  # both clients, round 1: the unsampled Gaussian
    assert all(r["defense_flwr_central_dp_epsilon_flower"] == pytest.approx(flower)
               and r["defense_flwr_central_dp_epsilon_opacus"] == pytest.approx(opacus) for r in rows)
    assert "central DP noise with 0.0250 stdev added" in (result.run_dir / "log.txt").read_text()
