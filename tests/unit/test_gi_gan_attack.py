"""The ``gi_gan`` attack (attacks/gi_gan/attack.py) on small synthetic graphs."""

import dataclasses

import pytest
import torch

from attacks.base import AttackContext, Budget, build_attack
from clients.training import fedsgd_gradient
from fedgraph_sim.data import make_synthetic
from fedgraph_sim.errors import ConfigError
from fedgraph_sim.threat import AttackerKnowledge, ObservedUpdate

DATA = make_synthetic(num_graphs=24, min_nodes=6, max_nodes=9, seed=2)
TINY = {"gan_steps": 20, "n_critic": 2, "gan_batch": 8, "iterations": 30, "lr": 0.05}


def observed(graph, aux=tuple(DATA.graphs[1:])):
    knowledge = AttackerKnowledge(model=dict(conv="gcn", hidden=16), num_features=DATA.schema.width, num_classes=2,
                                  schema=DATA.schema, aux_graphs=tuple(aux), aux_scenario="same")
    torch.manual_seed(0)
    model = knowledge.build_model()
    grad, _ = fedsgd_gradient(model, [graph])
    update = ObservedUpdate.fedsgd(model, grad)
    return update, knowledge.with_hints(node_counts=[graph.num_nodes])


def test_it_returns_an_n_node_graph_fitted_to_the_gradient_and_trains_the_generator_once():
    graph = DATA.graphs[0]
    update, knowledge = observed(graph)
    shared = {}
    c = AttackContext(seed=0, budget=Budget(120), shared=shared)
    attack = build_attack("gi_gan", TINY)
    assert attack.not_applicable(update, knowledge) is None
    (rec,) = attack.reconstruct(update, knowledge, c)
    n = graph.num_nodes
    assert rec.num_nodes == n and rec.x.shape == (n, DATA.schema.width) and rec.adj.shape == (n, n)
    assert torch.equal(rec.adj, rec.adj.t()) and rec.adj.diagonal().abs().sum() == 0
    assert (rec.adj >= 0).all() and (rec.adj <= 1).all()
    assert rec.label == int(graph.y[0])  # the bias-gradient rule is exact for one graph
    assert rec.info["objective"] < rec.info["initial_objective"]  # the latent search lowered the cosine distance
    assert rec.info["n_max"] == max(g.num_nodes for g in DATA.graphs[1:])
    assert len(shared) == 1
    (generator,) = shared.values()
    attack.reconstruct(update, knowledge, c)
    assert len(shared) == 1 and next(iter(shared.values())) is generator  # cached, not retrained
    build_attack("gi_gan", {**TINY, "gan_steps": 21}).reconstruct(update, knowledge, c)
    assert len(shared) == 2  # other settings, another generator


def test_what_it_needs_is_said():
    small = [g for g in DATA.graphs if g.num_nodes <= 7]
    big = next(g for g in DATA.graphs if g.num_nodes > 7)
    update, knowledge = observed(big, aux=small)
    attack = build_attack("gi_gan", TINY)
    assert "N_max = 7" in attack.not_applicable(update, knowledge)
    bare = dataclasses.replace(knowledge, aux_graphs=())
    assert "auxiliary graphs" in attack.not_applicable(update, bare)


@pytest.mark.parametrize("params, key", [({"distance": "l1"}, "distance"), ({"gan_steps": 0}, "gan_steps"),
                                         ({"lr": 0.0}, "lr"), ({"n_critic": 1.5}, "n_critic"),
                                         ({"z": 3}, "z")])
def test_bad_params(params, key):
    with pytest.raises(ConfigError, match=key):
        build_attack("gi_gan", params)
