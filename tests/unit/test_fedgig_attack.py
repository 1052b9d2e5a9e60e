"""The ``fedgig`` attack (attacks/fedgig/attack.py) on small graphs."""

import dataclasses

import pytest
import torch
from torch_geometric.data import Data
from torch_geometric.utils import dense_to_sparse

from attacks.base import AttackContext, Budget, build_attack
from clients.training import fedsgd_gradient
from fedgraph_sim.data import make_synthetic
from fedgraph_sim.errors import ConfigError
from fedgraph_sim.threat import AttackerKnowledge, ObservedUpdate

SCHEMA = make_synthetic(num_graphs=2, seed=0).schema


def path(n=5):
    a = torch.zeros(n, n)
    for i in range(n - 1):
        a[i, i + 1] = a[i + 1, i] = 1
    return a


def observed(graph, d, activation="relu"):
    knowledge = AttackerKnowledge(model=dict(conv="gcn", hidden=100, activation=activation), num_features=d,
                                  num_classes=2, schema=SCHEMA)
    torch.manual_seed(0)
    model = knowledge.build_model()
    grad, _ = fedsgd_gradient(model, [graph])
    update = ObservedUpdate.fedsgd(model, grad)
    return update, knowledge.with_hints(node_counts=[graph.num_nodes], features=[graph.x])


def ctx():
    return AttackContext(seed=0, budget=Budget(120))


def test_amc_recovers_a_five_node_path_exactly_with_known_features():
    """An end-to-end check: a 5-node path, one-hot X, a 2-layer GCN of width 100."""
    a = path()
    graph = Data(x=torch.eye(5, 6), edge_index=dense_to_sparse(a)[0], y=torch.tensor([1]))
    update, knowledge = observed(graph, 6)
    (rec,) = build_attack("fedgig", {"sr": False}).reconstruct(update, knowledge, ctx())
    assert torch.equal(rec.adj, a) and rec.label == 1 and rec.info["amc_edges"] == 4
    assert torch.equal(rec.x, graph.x)


def test_the_auto_encoder_completes_amcs_graph_into_edge_probabilities():
    data = make_synthetic(num_graphs=24, min_nodes=6, max_nodes=8, seed=2)
    graph = data.graphs[0]
    update, knowledge = observed(graph, data.schema.width)
    knowledge = knowledge.with_hints(node_counts=[graph.num_nodes], features=[graph.x])
    knowledge = dataclasses.replace(knowledge, aux_graphs=list(data.graphs[1:]))
    shared = {}
    c = AttackContext(seed=0, budget=Budget(120), shared=shared)
    attack = build_attack("fedgig", {"iterations": 100, "mgae_epochs": 20})
    (rec,) = attack.reconstruct(update, knowledge, c)
    assert rec.adj.shape == (graph.num_nodes,) * 2 and rec.adj.diagonal().abs().sum() == 0
    assert (rec.adj >= 0).all() and (rec.adj <= 1).all() and len(shared) == 1  # trained once, cached
    attack.reconstruct(update, knowledge, c)
    assert len(shared) == 1


def test_the_variants_of_sr_reuse_one_amc_fit_per_update():
    data = make_synthetic(num_graphs=24, min_nodes=6, max_nodes=8, seed=2)
    graph = data.graphs[0]
    update, knowledge = observed(graph, data.schema.width)
    knowledge = dataclasses.replace(knowledge, aux_graphs=list(data.graphs[1:]))
    shared, fits = {}, {}
    c = lambda: AttackContext(seed=0, budget=Budget(120), shared=shared, fits=fits)  # noqa: E731
    params = {"iterations": 60, "mgae_epochs": 20}
    (amc,) = build_attack("fedgig", {**params, "sr": False}).reconstruct(update, knowledge, c())
    stored = fits["value"][1].clone()
    (sr,) = build_attack("fedgig", params).reconstruct(update, knowledge, c())
    (cal,) = build_attack("fedgig", {**params, "sr_calibration": "amc_edges"}).reconstruct(update, knowledge, c())
    mgae = shared[next(iter(shared))]
    assert torch.equal(sr.adj, mgae(graph.x.float(), amc.adj))  # SR applied to the very graph AMC output
    assert int((cal.adj > 0.5).triu(1).sum()) == amc.info["amc_edges"] == sr.info["amc_edges"]
    assert torch.equal(fits["value"][1], stored)  # no variant changed the stored fit


def test_without_amc_the_adjacency_stays_continuous():
    a = path()
    graph = Data(x=torch.eye(5, 6), edge_index=dense_to_sparse(a)[0], y=torch.tensor([0]))
    update, knowledge = observed(graph, 6)
    (rec,) = build_attack("fedgig", {"amc": False, "sr": False, "iterations": 50}).reconstruct(update, knowledge,
                                                                                             ctx())
    off = rec.adj[~torch.eye(5, dtype=torch.bool)]
    assert ((off > 0) & (off < 1)).all()  # the paper's "w/o AMC": accuracy 0 by construction


def test_what_it_needs_is_said():
    graph = Data(x=torch.eye(5, 6), edge_index=dense_to_sparse(path())[0], y=torch.tensor([0]))
    update, knowledge = observed(graph, 6)
    bare = knowledge.with_hints(node_counts=[5])
    bare = dataclasses.replace(bare, features=None)
    assert "threat.features_known" in build_attack("fedgig", {"sr": False}).not_applicable(update, bare)
    assert "auxiliary graphs" in build_attack("fedgig").not_applicable(update, knowledge)
    assert build_attack("fedgig", {"features": "joint", "sr": False}).not_applicable(update, bare) is None


@pytest.mark.parametrize("params, key", [({"features": "some"}, "features"), ({"beta": 1.5}, "beta"),
                                         ({"symmetrise": "all"}, "symmetrise"),
                                         ({"sparsity_reference": "final"}, "sparsity_reference"),
                                         ({"sr_calibration": "truth"}, "sr_calibration")])
def test_bad_params(params, key):
    with pytest.raises(ConfigError, match=key):
        build_attack("fedgig", params)


def test_joint_mode_fits_the_features_too():
    graph = Data(x=torch.eye(5, 6), edge_index=dense_to_sparse(path())[0], y=torch.tensor([1]))
    update, knowledge = observed(graph, 6)
    bare = dataclasses.replace(knowledge, features=None)
    (rec,) = build_attack("fedgig", {"features": "joint", "sr": False, "iterations": 30}).reconstruct(
        update, bare, ctx())
    assert rec.x.shape == (5, 6) and not torch.equal(rec.x, graph.x)
    assert set(rec.adj.unique().tolist()) <= {0.0, 1.0}


def test_the_default_penalty_is_a_fraction_of_the_initial_dummys_own_distance():
    """The per-edge weight follows the victim's gradient scale: ten times the observed gradient
    gives a far larger weight (the initial L2 distance grows about a hundredfold)."""
    graph = Data(x=torch.eye(5, 6), edge_index=dense_to_sparse(path())[0], y=torch.tensor([1]))
    update, knowledge = observed(graph, 6)
    attack = build_attack("fedgig", {"sr": False, "iterations": 5})
    (rec,) = attack.reconstruct(update, knowledge, ctx())
    fields = {k: v for k, v in update.__dict__.items() if k != "gradient"}
    scaled = ObservedUpdate(**{**fields, "returned": {k: 10 * v for k, v in update.returned.items()}})
    (rec10,) = attack.reconstruct(scaled, knowledge, ctx())
    assert rec.info["sparsity_weight"] > 0
    assert rec10.info["sparsity_weight"] > 5 * rec.info["sparsity_weight"]
    (fixed,) = build_attack("fedgig", {"sr": False, "iterations": 5, "sparsity": 1e-3,
                                       "sparsity_reference": "none"}).reconstruct(update, knowledge, ctx())
    assert fixed.info["sparsity_weight"] == 1e-3
