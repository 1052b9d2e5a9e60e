"""The DP audit's canaries: made for the purpose (distinct, the dataset's schema), spread over the
clients, each included by a fair coin that only the ground truth reads."""

import numpy as np
import pytest
import torch

from clients.training import mean_gradient
from fedgraph_sim.config import load_config
from fedgraph_sim.dp_audit.canaries import graph_key, included, make_canaries
from fedgraph_sim.errors import ConfigError
from fedgraph_sim.models import build_model
from fedgraph_sim.models.gradients import per_graph_gradients
from fedgraph_sim.scenario import build_scenario

BASE = ["data.dataset=synthetic", "data.options={num_graphs: 40}", "data.degree_feature=true",
        "federation.num_clients=3", "model.hidden=32"]


def test_canaries_are_new_graphs_of_the_dataset_schema():
    dataset = build_scenario(load_config(None, BASE)).dataset
    canaries = make_canaries(dataset, 30, 3, seed=1)
    known = {graph_key(g, dataset) for g in dataset.graphs}
    keys = [graph_key(g, dataset) for g in canaries.graphs]
    assert len(set(keys)) == 30 and not set(keys) & known
    schema = dataset.schema
    for g in canaries.graphs:
        assert g.x.shape[1] == schema.width and int(g.graph_id) < 0
        degree = torch.bincount(g.edge_index[0], minlength=g.num_nodes)
        assert torch.equal(schema.degrees(g.x), degree)  # the degree block says the tree's degrees
    assert canaries.clients == tuple(i % 3 for i in range(30))


def test_inclusion_is_a_seeded_fair_coin():
    coins = included(4000, seed=3)
    assert np.array_equal(coins, included(4000, seed=3)) and not np.array_equal(coins, included(4000, seed=4))
    assert abs(coins.mean() - 0.5) < 0.03


def test_each_client_holds_its_included_canaries_and_its_own_graphs_unchanged():
    plain = build_scenario(load_config(None, BASE))
    audited = build_scenario(load_config(None, [*BASE, "canaries.count=24", "canaries.seed=5"]))
    first, inside = len(plain.dataset), included(24, 5)
    for k, (before, after) in enumerate(zip(plain.clients, audited.clients)):
        assert np.array_equal(after[after < first], before)
        expected = [first + i for i in range(24) if i % 3 == k and inside[i]]
        assert after[after >= first].tolist() == expected


def test_a_gradient_canary_trains_as_its_dirac():
    config = load_config(None, [*BASE, "canaries.count=6", "canaries.kind=gradient", "canaries.norm=3.0"])
    scenario = build_scenario(config)
    ds = scenario.dataset
    model = build_model(config.model, ds.num_features, ds.num_classes)
    canary, real = scenario.canaries.graphs[0], ds.graphs[0]
    grads, losses = per_graph_gradients(model, [real, canary])
    flat = torch.cat([grads[n][1].flatten() for n, _ in model.named_parameters()])
    assert flat.nonzero().view(-1).tolist() == [int(canary.dirac)] and float(flat.sum()) == 3.0
    alone, _ = per_graph_gradients(model, [real])
    assert all(torch.allclose(grads[n][0], alone[n][0]) for n in grads) and float(losses[1]) == 0.0
    mean, _ = mean_gradient(model, [real, canary])
    single, _ = mean_gradient(model, [real])
    dirac = {n: g[1] for n, g in grads.items()}
    assert all(torch.allclose(mean[n], (single[n] + dirac[n]) / 2, atol=1e-6) for n in mean)


def test_more_gradient_canaries_than_weights_is_refused():
    with pytest.raises(ConfigError, match="canaries.count: 5000 gradient canaries need as many weights"):
        build_scenario(load_config(None, [*BASE, "canaries.count=5000", "canaries.kind=gradient"]))
