"""GLG's closed forms as a starting point and a diagnostic (attacks/glg/initial.py): exact where
the propositions are (Prop. 6 at any depth, Props. 1-5 in a one-layer model), approximate and
reported as such elsewhere."""

import torch
from torch_geometric.data import Data
from torch_geometric.utils import dense_to_sparse

from attacks.glg.initial import analytic_start
from clients.training import mean_gradient, per_node_gradients
from fedgraph_sim.models import GraphClassifier
from tests.unit.test_glg_analytic import random_graph


def graph_gradient(model, x, a, label=1):
    g = Data(x=x, edge_index=dense_to_sparse(a)[0], y=torch.tensor([label]))
    return mean_gradient(model, [g])[0]


def test_graph_a_on_sage_starts_from_the_exact_adjacency_where_prop_6_holds():
    n, d = 8, 20
    a, x = random_graph(n, d, seed=3)
    torch.manual_seed(3)
    model = GraphClassifier(d, 2, conv="sage", activation="sigmoid", hidden=30, pool="flatten",
                            flatten_nodes=n).double()
    start = analytic_start(model, graph_gradient(model, x, a), x=x)
    assert start.info["analytic"] == "prop_6" and start.info["gradient_full_row_rank"]
    assert torch.equal(start.adj, a.float()) and start.x is None


def test_no_start_where_x_lacks_full_row_rank_and_the_report_says_why():
    n, d = 12, 7
    a, _ = random_graph(n, d, seed=4)
    x = torch.nn.functional.one_hot(torch.arange(n) % d, d).double()
    torch.manual_seed(4)
    model = GraphClassifier(d, 2, conv="sage", activation="sigmoid", hidden=30, pool="flatten",
                            flatten_nodes=n).double()
    start = analytic_start(model, graph_gradient(model, x, a, 0), x=x)
    assert start.adj is None and start.info["x_full_row_rank"] is False and start.info["rank_x"] == 7
    assert "Graph-a" in analytic_start(model, graph_gradient(model, x, a, 0)).info["analytic"]  # Graph-c


def node_graph(n, d, seed):
    a, x = random_graph(n, d, seed=seed)
    a, x = a.float(), x.float()  # the client's dense forward is float32
    return a, Data(x=x, edge_index=dense_to_sparse(a)[0], node_y=torch.arange(n) % 2,
                   train_mask=torch.ones(n, dtype=torch.bool), y=torch.tensor([0]))


def test_node_2c_on_a_one_layer_sage_starts_from_the_exact_features_and_adjacency():
    """One layer: every node's gradient reaches the layer through its own row (Props. 2, 1, 5)."""
    n, d = 6, 12
    a, graph = node_graph(n, d, seed=5)
    torch.manual_seed(5)
    model = GraphClassifier(d, 3, conv="sage", layers=1, task="node")
    start = analytic_start(model, {}, per_node=per_node_gradients(model, graph))
    assert start.info["analytic"] == "prop_5" and start.info["feature_residual"] < 1e-5
    torch.testing.assert_close(start.x, graph.x, atol=1e-4, rtol=0)
    assert torch.equal(start.adj, a.float())


def test_node_2_in_a_two_layer_model_is_only_approximate_and_says_so():
    n, d = 6, 12
    _, graph = node_graph(n, d, seed=6)
    torch.manual_seed(6)
    model = GraphClassifier(d, 2, conv="sage", activation="sigmoid", hidden=20, task="node")
    start = analytic_start(model, {}, per_node=per_node_gradients(model, graph))
    assert start.info["feature_residual"] > 1e-3 and start.x.shape == (n, d)


def test_node_2b_on_a_one_layer_gcn_starts_from_prop_4s_features():
    n, d = 6, 12
    a, graph = node_graph(n, d, seed=7)
    torch.manual_seed(7)
    model = GraphClassifier(d, 3, conv="gcn", layers=1, task="node")
    start = analytic_start(model, {}, adj=a, per_node=per_node_gradients(model, graph))
    assert start.info["analytic"] == "prop_4"
    if start.info["a_full_column_rank"]:
        torch.testing.assert_close(start.x, graph.x, atol=1e-3, rtol=0)
    else:
        assert start.x is None
