import numpy as np
import pytest
import torch
from torch_geometric.utils import degree, to_dense_adj

from fedgraph_sim.data import (adapt_width, auxiliary_graphs, dirichlet_partition, load_dataset,
                               make_synthetic)
from fedgraph_sim.data.synthetic import VALENCE
from fedgraph_sim.errors import ConfigError


def test_synthetic_is_deterministic():
    a, b = make_synthetic(num_graphs=30, seed=3), make_synthetic(num_graphs=30, seed=3)
    c = make_synthetic(num_graphs=30, seed=4)
    assert all(torch.equal(g.x, h.x) and torch.equal(g.edge_index, h.edge_index)
               for g, h in zip(a.graphs, b.graphs))
    assert any(g.num_nodes != h.num_nodes or not torch.equal(g.x, h.x)
               for g, h in zip(a.graphs, c.graphs))


def test_synthetic_graphs_are_molecule_like():
    data = make_synthetic(num_graphs=60, min_nodes=6, max_nodes=14, seed=0)
    assert data.num_features == 4 and data.num_classes == 2
    for g in data.graphs:
        assert 6 <= g.num_nodes <= 14
        assert torch.all(g.x.sum(1) == 1)  # one-hot
        deg = degree(g.edge_index[0], g.num_nodes).long()
        assert torch.all(deg <= torch.from_numpy(VALENCE)[g.x.argmax(1)])  # valence limits
        adj = to_dense_adj(g.edge_index, max_num_nodes=g.num_nodes)[0]
        assert torch.equal(adj, adj.t()) and adj.diagonal().sum() == 0
        undirected_edges = g.edge_index.size(1) // 2
        # Class is structural: trees have n-1 edges, class-1 graphs two ring closures more.
        assert undirected_edges == g.num_nodes - 1 + 2 * int(g.y)
    assert np.bincount(data.labels).tolist() == [30, 30]


def test_synthetic_order_is_banded():
    """Bonded atoms have nearby indices, as in TU files (the node-order controls rely on this)."""
    data = make_synthetic(num_graphs=50, seed=0)
    gaps = torch.cat([(g.edge_index[0] - g.edge_index[1]).abs() for g in data.graphs]).float()
    assert gaps.median() <= 2


def test_max_nodes_filter_drops_and_records():
    data = load_dataset("synthetic", max_nodes=10, num_graphs=40)
    assert all(g.num_nodes <= 10 for g in data.graphs)
    assert data.meta["dropped_by_max_nodes"] == 40 - len(data)
    assert data.meta["dropped_by_max_nodes"] > 0


def test_bad_dataset_input():
    with pytest.raises(ConfigError, match="unknown dataset 'nope'; valid datasets: synthetic, MUTAG"):
        load_dataset("nope")
    with pytest.raises(ConfigError, match="data.task: not an option of dataset synthetic"):
        load_dataset("synthetic", task=1)
    with pytest.raises(ConfigError, match="data.max_nodes"):
        load_dataset("synthetic", max_nodes=0)


def test_loader_options_reach_the_loader_and_are_type_checked():
    """``data.options`` go to the loader as given, its ``max_nodes`` included (the size filter has
    the same name), and an option of another type than the loader's default is one line."""
    data = load_dataset("synthetic", options={"num_graphs": 20, "min_nodes": 6, "max_nodes": 7})
    assert len(data) == 20 and {g.num_nodes for g in data.graphs} <= {6, 7}
    with pytest.raises(ConfigError,
                       match=r"data.options.min_nodes: must be an integer, like the default 6 \(got 'abc'\)"):
        load_dataset("synthetic", options={"min_nodes": "abc"})
    with pytest.raises(ConfigError, match="data.options.num_graphs: must be an integer"):
        load_dataset("synthetic", options={"num_graphs": True})


def test_aux_same_is_the_holdout():
    data = make_synthetic(num_graphs=40)
    parts = dirichlet_partition(data.labels, 2, alpha=1.0, seed=0)
    aux = auxiliary_graphs("same", data, holdout=parts[1])
    assert [g.graph_id for g in aux] == parts[1].tolist()


def test_aux_other_dataset_is_width_adapted():
    data = make_synthetic(num_graphs=20)
    assert adapt_width(torch.ones(3, 4), 6).tolist() == [[1, 1, 1, 1, 0, 0]] * 3
    assert adapt_width(torch.ones(3, 4), 2).shape == (3, 2)
    aux = auxiliary_graphs("dataset:synthetic", data)
    assert all(g.x.size(1) == data.num_features for g in aux)


@pytest.mark.parametrize("features", ["normal", "uniform"])
def test_aux_random_er(features):
    data = make_synthetic(num_graphs=40)
    aux = auxiliary_graphs("random:er", data, p=0.1, features=features, num_graphs=200, seed=1)
    assert len(aux) == 200
    sizes = [g.num_nodes for g in aux]
    assert min(sizes) >= 6 and max(sizes) <= 16
    possible = sum(n * (n - 1) for n in sizes)
    density = sum(g.edge_index.size(1) for g in aux) / possible
    assert 0.08 < density < 0.12
    x = torch.cat([g.x for g in aux])
    assert x.size(1) == data.num_features
    if features == "uniform":
        assert x.min() >= -1 and x.max() <= 1
    else:
        assert abs(float(x.mean())) < 0.05 and abs(float(x.std()) - 1) < 0.05
    again = auxiliary_graphs("random:er", data, p=0.1, features=features, num_graphs=200, seed=1)
    assert all(torch.equal(g.x, h.x) for g, h in zip(aux, again))


def test_bad_aux_scenarios():
    data = make_synthetic(num_graphs=20)
    with pytest.raises(ConfigError, match="aux.scenario: unknown scenario 'other'; valid: same, "
                                          "dataset:NAME, random:er"):
        auxiliary_graphs("other", data)
    for bad in ("random:ba", "dataset:", "same:holdout"):  # each scenario's own argument rule
        with pytest.raises(ConfigError, match=f"unknown scenario '{bad}'"):
            auxiliary_graphs(bad, data)
    with pytest.raises(ConfigError, match="aux.p"):
        auxiliary_graphs("random:er", data, p=1.5)
    with pytest.raises(ConfigError, match="aux.features"):
        auxiliary_graphs("random:er", data, features="cauchy")


def _own_storage(g) -> bool:
    return all(t.untyped_storage().nbytes() == t.numel() * t.element_size()
               for t in (g.x, g.edge_index, g.y) if t is not None)


def test_every_graph_owns_its_tensors():
    """A graph that is a view into its dataset's storage drags the whole dataset along when it is
    pickled (to an attack worker, into a capture): each must own its memory."""
    assert all(_own_storage(g) for g in make_synthetic(num_graphs=20).graphs)


def test_real_graphs_own_their_tensors(data_root):
    for name in ("MUTAG", "Tox21"):
        data = load_dataset(name)
        assert all(_own_storage(g) for g in data.graphs[:50]), name


def test_tu_label_names_are_read_from_the_readme_only_when_it_names_every_code(tmp_path):
    from fedgraph_sim.data.tu import _label_names

    (tmp_path / "README.txt").write_text("Intro\n\nNode labels:\n\n  0  C\n  1  N\n  2  O\n\nEdge labels:\n\n  0  x\n")
    assert _label_names(tmp_path, (0, 1, 2)) == ("C", "N", "O")
    assert _label_names(tmp_path, (0, 1, 2, 3)) is None  # code 3 unnamed: no names at all
    (tmp_path / "README.txt").write_text("no such section\n  0  C\n")
    assert _label_names(tmp_path, (0,)) is None
    assert _label_names(tmp_path / "missing", (0,)) is None
