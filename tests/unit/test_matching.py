"""Matching a client's update: its gradient, or its local training simulated (FedAvg)."""

import numpy as np
import pytest
import torch
from torch_geometric.utils import to_dense_adj

from attacks.base import AttackContext, Budget
from attacks.common import GradientMatcher
from attacks.inverting_gradients import InvertingGradients
from clients.training import fedavg_weights
from fedgraph_sim.data import make_synthetic
from fedgraph_sim.metrics import graph_metrics
from fedgraph_sim.models import GraphClassifier, to_dense
from fedgraph_sim.threat import AttackerKnowledge, ObservedUpdate

DATA = make_synthetic(num_graphs=40, min_nodes=6, max_nodes=8, seed=1)


def fedavg_update(graphs, lr, seed=0):
    """A client's FedAvg update: one graph per local step, plain SGD, as clients.training does."""
    torch.manual_seed(seed)
    model = GraphClassifier(4, 2)
    sent = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    new, _ = fedavg_weights(model, [[g] for g in graphs], lr)
    return ObservedUpdate(round=1, client_key=0, global_weights=sent, returned={k: v.numpy() for k, v in new.items()},
                          kind="weights", num_examples=1, metrics={}, lr=lr, local_steps=len(graphs), batch_size=1)


def test_the_simulated_objective_vanishes_at_the_true_graphs():
    zero, one = ([g for g in DATA.graphs if int(g.y) == c] for c in (0, 1))
    graphs = [zero[0], one[0], zero[1]]
    update = fedavg_update(graphs, lr=0.5)
    model = AttackerKnowledge(model={}, num_features=4, num_classes=2, schema=DATA.schema).build_model(
        update.global_weights, torch.float64)
    matcher = GradientMatcher.for_update(model, update)
    assert matcher.simulates and matcher.local_steps == 3
    x, adj, mask = to_dense(__import__("torch_geometric").data.Batch.from_data_list(graphs))
    labels = torch.tensor([int(g.y) for g in graphs])
    at_truth = float(matcher(x.double(), adj.double(), mask, labels))
    swapped = float(matcher(x.double(), adj.double(), mask, labels[[1, 0, 2]]))
    assert at_truth < 1e-10 < 1e-6 < swapped  # and which step had which label matters


@pytest.mark.slow
def test_simulating_five_local_steps_recovers_features_better_than_one_gradient():
    """The multi-step-aware Inverting Gradients against the same attack reading the FedAvg update
    as the gradient of one batch of the five graphs (labels granted, as Geiping et al. assume)."""
    mse = {"simulated": [], "one_gradient": []}
    for seed in range(3):
        graphs = DATA.graphs[5 * seed:5 * seed + 5]
        update = fedavg_update(graphs, lr=0.5, seed=seed)
        as_gradient = ObservedUpdate(round=1, client_key=0, global_weights=update.global_weights,
                                     returned={k: v.numpy() for k, v in update.gradient.items()}, kind="gradient",
                                     num_examples=5, metrics={}, lr=0.5, local_steps=1, batch_size=5)
        knowledge = AttackerKnowledge(model={}, num_features=4, num_classes=2, schema=DATA.schema).with_hints(
            node_counts=[g.num_nodes for g in graphs], labels=[int(g.y) for g in graphs])
        for key, observed in (("simulated", update), ("one_gradient", as_gradient)):
            recs = InvertingGradients().reconstruct(observed, knowledge, AttackContext(0, Budget(300)))
            assert recs[0].info["attack_input"] == ("simulated_local_training" if key == "simulated" else "gradient")
            mse[key].append(np.mean([graph_metrics(r.x, r.adj, g.x,
                                                   to_dense_adj(g.edge_index, max_num_nodes=g.num_nodes)[0],
                                                   alignment="matched", schema=DATA.schema)["feature_mse"]
                                     for r, g in zip(recs, graphs)]))
    assert np.mean(mse["simulated"]) < 0.7 * np.mean(mse["one_gradient"]), mse
