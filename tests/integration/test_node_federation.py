"""A node-classification federation through Flower: client subgraphs, a leaky client's per-node
gradients kept out of the aggregate and handed to GLG's Node-2 attacker, Node-1 without them."""


import pytest

from fedgraph_sim.config import load_config
from fedgraph_sim.rows.store import read_rows
from fedgraph_sim.runtime.simulation import run

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("local_ray")]  # one Ray for the session

NODE = ["data.dataset=random_graph_balls", "data.options={num_subgraphs: 12, subgraph_nodes: 10, features: 16}",
        "federation.num_clients=2", "model={conv: sage, activation: sigmoid, hidden: 20, task: node}",
        "attack.time_budget=30"]


def rows_of(result) -> list[dict]:
    return read_rows(result.run_dir)


def test_leaky_clients_feed_node_2_and_the_rows_record_the_grant(tmp_path):
    config = load_config(None, NODE + ["federation.rounds=2", "threat.per_node_gradients=true",
                                       "threat.features_known=[glg]", "attack.names=[glg, majority_type, dlg]",
                                       "attack.params.glg.iterations=60", f"output.dir={tmp_path}"])
    result = run(config)
    rows = rows_of(result)
    glg = [r for r in rows if r["attack"] == "glg"]
    assert len(glg) == 4 and all(r["status"] == "ok" and r["info_variant"] == "node_2a" for r in glg)
    assert all(r["hint_per_node_gradients"] and r["hint_features"] for r in glg)
    aucs = [r["identity_adj_auc"] for r in glg if r["identity_adj_auc"] == r["identity_adj_auc"]]  # NaN: no edge
    assert aucs and all(0 <= v <= 1 for v in aucs) and all("gain_identity_adj_auc" in r for r in glg)
    assert all(r["status"] == "not_applicable" and "classifies nodes" in r["message"]
               for r in rows if r["attack"] == "dlg")
    assert all(r["status"] == "ok" for r in rows if r["attack"] == "majority_type")


def test_node_1_targets_the_centre_of_each_subgraph(tmp_path):
    config = load_config(None, NODE + ["data.options={num_subgraphs: 12, subgraph_nodes: 10, features: 16, "
                                       "labelled: center}", "data.node_order=shuffled",
                                       "attack.names=[glg, majority_type]", "attack.params.glg.iterations=60",
                                       f"output.dir={tmp_path}"])
    rows = rows_of(run(config))
    glg = [r for r in rows if r["attack"] == "glg"]
    assert glg and all(r["info_variant"] == "node_1" and not r["hint_per_node_gradients"] for r in glg)
    # scored on the shuffled subgraph's centre, beside the prior's guess for it
    assert all(r["identity_target_rnmse"] >= 0 and "prior_identity_target_rnmse" in r for r in glg)
