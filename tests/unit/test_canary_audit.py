"""The curious server's canary scores: from the updates it observes and the canaries it made,
never from which canaries were included."""

import inspect

import numpy as np
import pytest
import torch

import server.canary_audit as canary_audit
from clients.training import mean_gradient
from fedgraph_sim.config import load_config
from fedgraph_sim.errors import ConfigError
from fedgraph_sim.models import build_model
from fedgraph_sim.models.gradients import per_graph_gradients
from fedgraph_sim.scenario import build_scenario
from fedgraph_sim.threat import AGGREGATE, ObservedUpdate
from server.canary_audit import CanaryClientScorer, CanaryScorer

BASE = ["data.dataset=synthetic", "data.options={num_graphs: 30}", "federation.num_clients=2", "model.hidden=16"]


def _setup(kind, count=8):
    config = load_config(None, [*BASE, f"canaries.count={count}", f"canaries.kind={kind}"])
    scenario = build_scenario(config)
    ds = scenario.dataset
    model = build_model(config.model, ds.num_features, ds.num_classes)
    scorer = CanaryScorer(scenario.canaries, config.model, ds.num_features, ds.num_classes)
    return scenario, model, scorer


def _update(model, gradient, client, batch_size=1, metrics=None):
    sent = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    return ObservedUpdate(round=1, client_key=client, global_weights=sent,
                          returned={k: np.asarray(v) for k, v in gradient.items()}, kind="gradient",
                          num_examples=batch_size, metrics=metrics or {}, lr=0.1, local_steps=1,
                          batch_size=batch_size)


def test_a_gradient_canary_scores_its_weight_times_the_batch_size_in_its_clients_updates():
    scenario, model, scorer = _setup("gradient")
    canaries = scenario.canaries
    flat = torch.zeros(sum(p.numel() for p in model.parameters()))
    flat[int(canaries.graphs[0].dirac)] = 0.5  # canary 0 (client 0) in a batch of 4
    flat[int(canaries.graphs[1].dirac)] = 0.25  # canary 1 belongs to client 1: not scored on client 0
    gradient, start = {}, 0
    for n, p in model.named_parameters():
        gradient[n] = flat[start:start + p.numel()].view_as(p).numpy()
        start += p.numel()
    scorer([_update(model, gradient, client=0, batch_size=4)])
    assert scorer.scores[0] == 2.0 and scorer.scores[1] == 0.0
    scorer([_update(model, gradient, client=AGGREGATE, batch_size=4)])  # an aggregate: every canary
    assert scorer.scores[0] == 4.0 and scorer.scores[1] == 1.0


def test_a_graph_canarys_replayed_gradient_matches_the_update_of_that_graph_alone():
    scenario, model, scorer = _setup("graph")
    canary = scenario.canaries.graphs[2]  # client 0's
    grads, _ = per_graph_gradients(model, [canary])
    scorer([_update(model, {n: g[0] for n, g in grads.items()}, client=0)])
    assert abs(scorer.scores[2] - 1.0) < 1e-6
    others = [i for i in scenario.canaries.of_client(0) if i != 2]
    assert np.all(scorer.scores[others] < scorer.scores[2])
    assert np.all(np.isneginf(scorer.scores[scenario.canaries.of_client(1)]))  # never observed


def test_the_report_counts_guesses_against_the_claim():
    _, model, scorer = _setup("gradient", count=40)
    scorer.scores[:] = [5] * 20 + [0] * 20
    metrics = {"defense-epsilon": 0.01, "defense-delta": 1e-4}
    scorer([_update(model, {n: np.zeros(tuple(p.shape)) for n, p in model.named_parameters()}, 0, 1, metrics)])
    outcome = scorer.report(np.array([True] * 20 + [False] * 20))
    assert outcome["correct"] == outcome["guesses"] >= 36 and outcome["delta"] == 1e-4
    assert outcome["epsilon_claimed"] == 0.01 and outcome["claim_refuted"] and outcome["epsilon_lower_bound"] > 0.01
    wrong = scorer.report(np.array([False] * 20 + [True] * 20))
    assert wrong["correct"] == 0 and wrong["epsilon_lower_bound"] == 0 and not wrong["claim_refuted"]


def test_the_scores_never_read_which_canaries_were_included():
    source = inspect.getsource(canary_audit)
    assert "included(" not in source and "dp_audit.canaries import Canaries\n" in source


def test_canary_clients_score_the_released_models_change_along_their_directions():
    directions = np.eye(3, 5)  # three canary clients, five parameters
    scorer = CanaryClientScorer(directions, ["w"])
    scorer.release({"w": np.zeros(5)})
    scorer.release({"w": np.array([0.5, 0.0, -0.25, 1.0, 0.0])})
    scorer.release({"w": np.array([1.0, 0.0, -0.25, 1.0, 0.0])})
    assert scorer.scores.tolist() == [1.0, 0.0, -0.25]
    metrics = {"defense-flwr-central-dp-epsilon-flower": 3.0, "defense-flwr-central-dp-epsilon-opacus": 2.5,
               "defense-flwr-central-dp-delta": 1e-6}
    model = build_model(load_config(None, BASE).model, 4, 2)
    scorer([_update(model, {n: np.zeros(tuple(p.shape)) for n, p in model.named_parameters()}, 0, 1, metrics)])
    assert scorer.claimed() == (2.5, 1e-6)  # the tighter accountant's claim


def test_grains_span_checks_tell_the_canary_in_a_batch_from_those_outside():
    config = load_config(None, [*BASE, "model.hidden=64", "canaries.count=8", "canaries.score=span"])
    scenario = build_scenario(config)
    ds = scenario.dataset
    model = build_model(config.model, ds.num_features, ds.num_classes)
    scorer = CanaryScorer(scenario.canaries, config.model, ds.num_features, ds.num_classes, score="span")
    mine = scenario.canaries.of_client(0)
    batch = [scenario.canaries.graphs[mine[0]], ds.graphs[0]]  # a canary and a real graph, one update
    gradient, _ = mean_gradient(model, batch)
    scorer([_update(model, {n: g.numpy() for n, g in gradient.items()}, client=0, batch_size=2)])
    assert scorer.scores[mine[0]] > -1e-5  # every row of it in the update's row spaces
    assert np.all(scorer.scores[mine[1:]] < -1e-3)


def test_span_checks_need_gcn_layers():
    config = load_config(None, [*BASE, "model.conv=gat", "canaries.count=4", "canaries.score=span"])
    scenario = build_scenario(config)
    ds = scenario.dataset
    with pytest.raises(ConfigError, match="canaries.score: span reads GCN layers"):
        CanaryScorer(scenario.canaries, config.model, ds.num_features, ds.num_classes, score="span")


def test_the_loss_score_is_the_drop_the_update_gives_the_canary():
    from clients.training import loss_on

    config = load_config(None, [*BASE, "canaries.count=8"])
    scenario = build_scenario(config)
    ds = scenario.dataset
    model = build_model(config.model, ds.num_features, ds.num_classes)
    scorer = CanaryScorer(scenario.canaries, config.model, ds.num_features, ds.num_classes, score="loss")
    mine = scenario.canaries.of_client(0)
    gradient, _ = mean_gradient(model, [scenario.canaries.graphs[mine[0]]])  # the client's step on one canary
    scorer([_update(model, {n: g.numpy() for n, g in gradient.items()}, client=0)])
    stepped = build_model(config.model, ds.num_features, ds.num_classes)
    stepped.load_state_dict({k: v - 0.1 * gradient[k] if k in gradient else v for k, v in model.state_dict().items()})
    with torch.no_grad():
        for i in mine:
            graph = [scenario.canaries.graphs[i]]
            drop = float(loss_on(model, graph) - loss_on(stepped, graph))
            assert scorer.scores[i] == pytest.approx(drop, abs=1e-6)
    assert scorer.scores[mine[0]] > 0  # the canary stepped on lost loss
    assert np.all(np.isneginf(scorer.scores[scenario.canaries.of_client(1)]))
