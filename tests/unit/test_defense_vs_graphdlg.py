"""Defenses against GraphDLG: strong gradient noise takes its node-type recovery down to the
gradient-free majority baseline, and an empty stack leaves the attack's input untouched."""

import numpy as np
import pytest
import torch
from torch_geometric.utils import to_dense_adj

from attacks.base import AttackContext, Budget
from attacks.graphdlg import GraphDLG
from attacks.priors import MajorityType
from clients.defenses import build_defenses
from clients.training import fedsgd_gradient
from fedgraph_sim.metrics import graph_metrics
from fedgraph_sim.models import GraphClassifier
from fedgraph_sim.threat import ObservedUpdate


def type_accuracies(graphs, model, knowledge, defenses, attack, seed=0):
    weights = {k: v.numpy() for k, v in model.state_dict().items()}
    stack = build_defenses(defenses)
    rng = torch.Generator().manual_seed(seed)
    scores, shared = {"attack": [], "majority": []}, {}
    for g in graphs:
        grad, _ = fedsgd_gradient(model, [g])
        grad = stack.apply(grad, rng)
        update = ObservedUpdate(round=1, client_key=0, global_weights=weights,
                                returned={k: v.numpy() for k, v in grad.items()}, kind="gradient",
                                num_examples=1, metrics={}, lr=0.01, local_steps=1, batch_size=1)
        hinted = knowledge.with_hints(node_counts=[g.num_nodes])
        adj = to_dense_adj(g.edge_index, max_num_nodes=g.num_nodes)[0]
        ctx = AttackContext(seed=0, budget=Budget(120), shared=shared)
        for key, method in (("attack", attack), ("majority", MajorityType())):
            rec, = method.reconstruct(update, hinted, ctx)
            scores[key].append(graph_metrics(rec.x, rec.adj, g.x, adj)["node_type_accuracy"])
    return {k: float(np.mean(v)) for k, v in scores.items()}


def test_an_empty_stack_passes_the_gradient_through_unchanged():
    grad = {"w": torch.randn(3, 4), "b": torch.randn(2)}
    out = build_defenses([]).apply(grad, torch.Generator())
    assert all(out[k] is grad[k] for k in grad)


@pytest.mark.slow
def test_strong_gradient_noise_takes_graphdlg_types_down_to_the_majority_baseline(data_root):
    from fedgraph_sim.config import load_config
    from fedgraph_sim.scenario import attacker_knowledge, build_scenario

    config = load_config(None, ["data.dataset=MUTAG", "federation.num_clients=2",
                                "aux.source=client:1", "partition.min_partition_size=10"])
    scenario = build_scenario(config)
    knowledge = attacker_knowledge(config, scenario)
    torch.manual_seed(config.seed)
    model = GraphClassifier(7, 2)
    victims = [scenario.dataset.graphs[int(i)] for i in scenario.clients[0][:30]]
    attack = GraphDLG()
    clean = type_accuracies(victims, model, knowledge, [], attack)
    noisy = type_accuracies(victims, model, knowledge, [{"name": "dp_gradients", "sigma": 1.0}], attack)
    # Without noise, GNFR's one recovered type is the majority type (carbon) on MUTAG: as good as
    # the prior. With sigma = 1 it is no better than the prior, and lower on average.
    assert clean["attack"] == pytest.approx(clean["majority"], abs=0.02)
    assert noisy["attack"] <= noisy["majority"]
    assert noisy["attack"] < clean["attack"] - 0.2
