import json
import time

import pytest
import torch

from attacks.base import Attack, Reconstruction, Requirements
from attacks.random_guess import RandomGuess
from clients.training import fedsgd_gradient
from fedgraph_sim.audit import AuditRecord, AuditStore
from fedgraph_sim.config import load_config
from fedgraph_sim.models import GraphClassifier
from fedgraph_sim.results import read_rows, summarize
from fedgraph_sim.scenario import attacker_knowledge, build_scenario
from fedgraph_sim.threat import ObservedUpdate
from server.attack_runner import AttackRunner


def make_runner(tmp_path, attacks, overrides=()):
    config = load_config(None, ["data.dataset=synthetic", "federation.num_clients=2",
                                "attack.time_budget=1.0", *overrides])
    scenario = build_scenario(config)
    graph = scenario.dataset.graphs[int(scenario.clients[0][0])]
    torch.manual_seed(0)
    model = GraphClassifier(4, 2)
    grad, _ = fedsgd_gradient(model, [graph])
    AuditStore(tmp_path).write(AuditRecord(1, 0, [graph], 1))
    update = ObservedUpdate(round=1, client_key=0,
                            global_weights={k: v.numpy() for k, v in model.state_dict().items()},
                            returned={k: v.numpy() for k, v in grad.items()}, kind="gradient",
                            num_examples=1, metrics={}, lr=0.01, local_steps=1, batch_size=1)
    runner = AttackRunner(config, tmp_path, attacker_knowledge(config, scenario), attacks)
    return runner, update, scenario


class Raises(Attack):
    name, paper = "raises", "test double"

    def reconstruct(self, update, knowledge, ctx):
        raise ValueError("boom\nsecond line")


class ReturnsNaN(Attack):
    name, paper = "nan", "test double"

    def reconstruct(self, update, knowledge, ctx):
        n = knowledge.node_counts[0]
        return [Reconstruction(torch.full((n, 4), float("nan")), torch.zeros(n, n), n)]


class Loops(Attack):
    """Cooperative: checks its budget like the optimisation loops do."""
    name, paper = "loops", "test double"

    def reconstruct(self, update, knowledge, ctx):
        while True:
            ctx.budget.check()
            time.sleep(0.01)


class Sleeps(Attack):
    """Not cooperative: overruns its budget, then returns."""
    name, paper = "sleeps", "test double"

    def reconstruct(self, update, knowledge, ctx):
        time.sleep(1.2)
        return RandomGuess().reconstruct(update, knowledge, ctx)


class NeedsAux(Attack):
    name, paper = "needs_aux", "test double"
    requires = Requirements(exact_gradient=True, single_graph=True, aux_graphs=True)

    def reconstruct(self, update, knowledge, ctx):
        return RandomGuess().reconstruct(update, knowledge, ctx)


def test_failures_become_status_rows_and_the_rest_goes_on(tmp_path):
    attacks = {"raises": Raises(), "nan": ReturnsNaN(), "loops": Loops(), "sleeps": Sleeps(),
               "random": RandomGuess()}
    runner, update, _ = make_runner(tmp_path, attacks)
    runner([update])
    rows = {r["attack"]: r for r in read_rows(tmp_path)}
    assert rows["raises"]["status"] == "error" and rows["raises"]["message"] == "ValueError: boom"
    assert rows["nan"]["status"] == "nan"
    assert rows["loops"]["status"] == "timeout" and 1.0 <= rows["loops"]["seconds"] < 3
    assert rows["sleeps"]["status"] == "timeout"
    assert rows["random"]["status"] == "ok"
    assert 0 <= rows["random"]["identity_adj_auc"] <= 1
    summary = {(s["attack"], s["alignment"]): s for s in summarize(read_rows(tmp_path))}
    assert summary[("raises", "identity")]["failed"] == 1
    assert summary[("random", "matched")]["graphs"] == 1


def test_requirements_unmet_give_not_applicable(tmp_path):
    runner, update, _ = make_runner(tmp_path, {"needs_aux": NeedsAux()}, ["aux.scenario=random:er"])
    weights = ObservedUpdate(round=1, client_key=0, global_weights=update.global_weights,
                             returned=update.global_weights, kind="weights", num_examples=1,
                             metrics={}, lr=0.01, local_steps=3, batch_size=1)
    runner([weights])
    row, = read_rows(tmp_path)
    assert row["status"] == "not_applicable" and "exact gradient" in row["message"]


def test_rows_record_the_threat_model_and_are_valid_json(tmp_path):
    runner, update, _ = make_runner(tmp_path, {"random": RandomGuess()}, ["threat.label=true"])
    runner([update])
    line = (tmp_path / "results.jsonl").read_text().splitlines()[0]
    row = json.loads(line)
    assert row["hint_node_count"] is True and row["hint_label"] is True
    assert row["aux"] == "same:holdout" and row["defense"] == "none"
    assert {"graph_id", "num_nodes", "seconds", "label_true", "matched_adj_ap"} <= set(row)


def test_selection_of_rounds_and_clients(tmp_path):
    runner, update, _ = make_runner(tmp_path, {"random": RandomGuess()}, ["attack.clients=[1]"])
    runner([update])
    assert read_rows(tmp_path) == []


def test_information_gain_is_raw_minus_prior_on_the_same_graph(tmp_path):
    from attacks.priors import AuxMeanAdjacency, MajorityType

    attacks = {"random": RandomGuess(), "aux_mean_adjacency": AuxMeanAdjacency(),
               "majority_type": MajorityType()}
    runner, update, _ = make_runner(tmp_path, attacks)
    runner([update])
    rows = {r["attack"]: r for r in read_rows(tmp_path)}
    structure, types = rows["aux_mean_adjacency"], rows["majority_type"]
    for alignment in ("identity", "matched"):
        for metric, prior_row in (("adj_auc", structure), ("adj_ap", structure),
                                  ("edge_accuracy", structure), ("node_type_accuracy", types),
                                  ("feature_mse", types)):
            column = f"{alignment}_{metric}"
            for row in rows.values():
                assert row[f"prior_{column}"] == pytest.approx(prior_row[column])
                assert row[f"gain_{column}"] == pytest.approx(row[column] - prior_row[column])
    assert rows["aux_mean_adjacency"]["gain_identity_adj_auc"] == pytest.approx(0.0)
    entry = next(s for s in summarize(read_rows(tmp_path))
                 if s["attack"] == "random" and s["alignment"] == "identity")
    assert entry["gain_adj_auc_mean"] == pytest.approx(
        rows["random"]["identity_adj_auc"] - structure["identity_adj_auc"])
    assert entry["prior_adj_auc_mean"] == pytest.approx(structure["identity_adj_auc"])


class PrepareFails(Attack):
    name, paper = "prepare_fails", "test double"

    def prepare(self, updates, knowledge, ctx):
        raise RuntimeError("decoder exploded")

    def reconstruct(self, update, knowledge, ctx):
        raise RuntimeError("still broken")


def test_a_failing_per_round_preparation_does_not_stop_the_round(tmp_path):
    runner, update, _ = make_runner(tmp_path, {"prepare_fails": PrepareFails(), "random": RandomGuess()})
    runner([update])
    rows = {r["attack"]: r for r in read_rows(tmp_path)}
    assert rows["prepare_fails"]["status"] == "error" and rows["random"]["status"] == "ok"
