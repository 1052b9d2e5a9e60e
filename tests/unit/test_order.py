import networkx as nx
import numpy as np
import pytest
import torch
from torch_geometric.utils import to_dense_adj, to_networkx

from fedgraph_sim.config import load_config
from fedgraph_sim.data import make_synthetic
from fedgraph_sim.data.order import reorder
from fedgraph_sim.errors import ConfigError
from fedgraph_sim.metrics import graph_metrics
from fedgraph_sim.scenario import build_scenario


def labelled_nx(g):
    G = to_networkx(g, to_undirected=True)
    nx.set_node_attributes(G, {i: int(t) for i, t in enumerate(g.x.argmax(1))}, "t")
    return G


def prior_auc(graphs, aux):
    """The mean-aux-adjacency prior's identity-order AUC (strict upper triangle)."""
    n_max = max(g.num_nodes for g in aux)
    prior = torch.zeros(n_max, n_max)
    for g in aux:
        prior[:g.num_nodes, :g.num_nodes] += to_dense_adj(g.edge_index, max_num_nodes=g.num_nodes)[0]
    prior /= len(aux)
    aucs = [graph_metrics(g.x, prior[:g.num_nodes, :g.num_nodes], g.x,
                          to_dense_adj(g.edge_index, max_num_nodes=g.num_nodes)[0])["adj_auc"]
            for g in graphs]
    return float(np.nanmean(aucs))


def test_shuffled_graphs_are_isomorphic_to_the_originals():
    data = make_synthetic(num_graphs=30)
    shuffled = reorder(data.graphs, "shuffled", seed=0)
    match = nx.algorithms.isomorphism.categorical_node_match("t", -1)
    moved = 0
    for g, h in zip(data.graphs, shuffled):
        assert nx.is_isomorphic(labelled_nx(g), labelled_nx(h), node_match=match)
        assert torch.equal(g.y, h.y) and g.graph_id == h.graph_id
        moved += int(not torch.equal(g.x, h.x) or not torch.equal(g.edge_index, h.edge_index))
    assert moved > 20


def test_shuffling_is_deterministic_per_seed():
    data = make_synthetic(num_graphs=10)
    a, b = reorder(data.graphs, "shuffled", 3), reorder(data.graphs, "shuffled", 3)
    c = reorder(data.graphs, "shuffled", 4)
    assert all(torch.equal(g.x, h.x) and torch.equal(g.edge_index, h.edge_index) for g, h in zip(a, b))
    assert any(not torch.equal(g.x, h.x) for g, h in zip(a, c))


def test_shuffling_removes_the_banded_order_prior():
    data = make_synthetic(num_graphs=200, seed=1)
    victims, aux = data.graphs[:50], data.graphs[50:]
    assert prior_auc(victims, aux) > 0.7  # synthetic graphs are built in a banded order
    shuffled = reorder(data.graphs, "shuffled", seed=0)
    assert prior_auc(shuffled[:50], shuffled[50:]) == pytest.approx(0.5, abs=0.06)


def test_node_order_flows_from_the_config_and_canonical_needs_smiles():
    config = load_config(None, ["data.dataset=synthetic", "data.node_order=shuffled"])
    original = load_config(None, ["data.dataset=synthetic"])
    g, h = build_scenario(config).dataset.graphs[0], build_scenario(original).dataset.graphs[0]
    assert g.graph_id == h.graph_id and not torch.equal(g.edge_index, h.edge_index)
    with pytest.raises(ConfigError, match="data.node_order: 'canonical' needs SMILES"):
        build_scenario(load_config(None, ["data.dataset=synthetic", "data.node_order=canonical"]))


@pytest.mark.slow
def test_real_mutag_prior_drops_to_chance_when_shuffled(data_root):
    def scenario(order):
        config = load_config(None, ["data.dataset=MUTAG", "federation.num_clients=2",
                                    "aux.source=client:1", "partition.min_partition_size=10",
                                    f"data.node_order={order}"])
        s = build_scenario(config)
        graphs = s.dataset.graphs
        return [graphs[i] for i in s.clients[0]], [graphs[i] for i in s.clients[1]]

    assert prior_auc(*scenario("original")) > 0.85
    assert prior_auc(*scenario("shuffled")) == pytest.approx(0.5, abs=0.05)


def test_canonical_order_on_molecules(data_root):
    config = load_config(None, ["data.dataset=BBBP", "data.node_order=canonical", "data.max_nodes=30"])
    graphs = build_scenario(config).dataset.graphs[:20]
    again = build_scenario(config).dataset.graphs[:20]
    assert all(torch.equal(g.x, h.x) for g, h in zip(graphs, again))
