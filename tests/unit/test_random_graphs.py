import numpy as np
import pytest
import torch

from fedgraph_sim.data import load_dataset
from fedgraph_sim.data.order import reorder
from fedgraph_sim.data.random_graphs import bfs_ball, random_edges
from fedgraph_sim.errors import ConfigError


def test_random_edges_are_simple_undirected_and_near_the_degree():
    n, degree = 400, 4.0
    e = random_edges(n, degree, np.random.default_rng(0))
    pairs = {(int(a), int(b)) for a, b in e.t()}
    assert all(a != b for a, b in pairs)  # no self-pairs
    assert all((b, a) in pairs for a, b in pairs)  # undirected
    assert len(pairs) == e.size(1)  # no duplicates
    mean_degree = e.size(1) / n
    assert 3.8 <= mean_degree <= 4.0  # d*n/2 draws, a few duplicates dropped


def test_random_graphs_follow_the_paper_settings():
    ds = load_dataset("random_graphs", num_graphs=30, seed=1)
    assert ds.task == "graph" and ds.num_features == 128 and ds.num_classes == 2
    sizes = [g.num_nodes for g in ds.graphs]
    assert min(sizes) >= 40 and max(sizes) <= 60
    assert abs(torch.cat([g.x for g in ds.graphs]).std().item() - 1) < 0.05  # N(0, 1) features
    assert ds.schema.continuous


def test_bfs_ball_caps_in_bfs_order():
    neighbours = [np.array([1, 2]), np.array([0, 3]), np.array([0, 4]), np.array([1, 5]), np.array([2]), np.array([3])]
    assert bfs_ball(neighbours, 0, hops=3, cap=10) == [0, 1, 2, 3, 4, 5]
    assert bfs_ball(neighbours, 0, hops=1, cap=10) == [0, 1, 2]
    assert bfs_ball(neighbours, 0, hops=3, cap=4) == [0, 1, 2, 3]  # the farthest hop is cut first


@pytest.mark.parametrize("name", ["random_graph_balls", "sbm_communities"])
def test_node_level_subgraphs_carry_node_labels_and_a_centre(name):
    ds = load_dataset(name, labelled="center")
    assert ds.task == "node"
    for g in ds.graphs[:5]:
        assert g.node_y.shape == (g.num_nodes,) and g.center == 0
        assert int(g.y) == int(g.node_y[0])  # the subgraph's label is its centre's
        assert g.train_mask.tolist() == [True] + [False] * (g.num_nodes - 1)
        assert int(g.edge_index.max()) < g.num_nodes


def test_balls_are_capped_and_connected_to_their_centre():
    ds = load_dataset("random_graph_balls", num_subgraphs=5, subgraph_nodes=30)
    for g in ds.graphs:
        assert g.num_nodes <= 30 and bool(g.train_mask.all())
        reached, frontier = {0}, [0]  # every node of a BFS ball is reachable from the centre
        while frontier:
            frontier = [int(b) for a, b in g.edge_index.t() if int(a) in frontier and int(b) not in reached]
            reached |= set(frontier)
        assert reached == set(range(g.num_nodes))


def test_shuffling_moves_node_labels_and_the_centre_with_the_nodes():
    ds = load_dataset("random_graph_balls", num_subgraphs=3, labelled="center")
    shuffled = reorder(ds.graphs, "shuffled", seed=0)
    for g, s in zip(ds.graphs, shuffled):
        assert torch.equal(s.x[s.center], g.x[0])
        assert int(s.node_y[s.center]) == int(g.node_y[0]) and bool(s.train_mask[s.center])
        assert int(s.train_mask.sum()) == 1


def test_a_batch_of_k_targets_labels_the_centre_and_k_minus_one_other_nodes():
    batched = load_dataset("random_graph_balls", num_subgraphs=4, subgraph_nodes=12, labelled=5)
    plain = load_dataset("random_graph_balls", num_subgraphs=4, subgraph_nodes=12)
    for g, p in zip(batched.graphs, plain.graphs):
        assert int(g.train_mask.sum()) == 5 and bool(g.train_mask[0])
        assert torch.equal(g.x, p.x) and torch.equal(g.edge_index, p.edge_index)  # the same graphs
    assert len({tuple(g.train_mask.nonzero().view(-1).tolist()) for g in batched.graphs}) > 1


def test_bad_generator_options_name_the_key():
    for bad in ("some", 0, True):
        with pytest.raises(ConfigError, match="data.options.labelled"):
            load_dataset("random_graph_balls", labelled=bad)
    with pytest.raises(ConfigError, match="data.options.p_in"):
        load_dataset("sbm_communities", p_in=0.01, p_out=0.1)
