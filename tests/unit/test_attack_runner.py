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
from fedgraph_sim.rows.statistics import summarize
from fedgraph_sim.rows.store import read_rows
from fedgraph_sim.runtime.session import attack_pipeline
from fedgraph_sim.scenario import attacker_knowledge, build_scenario
from fedgraph_sim.threat import ObservedUpdate
from server.attack_runner import AttackRunner


def make_runner(tmp_path, attacks, overrides=()):
    """The runtime's pipeline (runner -> evaluator) on one synthetic FedSGD update of client 0,
    attacks in this process unless ``attack.workers`` is overridden (test_attack_pool.py runs
    them in workers)."""
    config = load_config(None, ["data.dataset=synthetic", "federation.num_clients=2",
                                "attack.time_budget=1.0", "attack.workers=0", *overrides])
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
    runner = attack_pipeline(config, attacks, attacker_knowledge(config, scenario), tmp_path)
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


class IgnoresHints(Attack):
    """Reconstructs a fixed 3-node graph: reads none of the granted hints."""
    name, paper = "ignores_hints", "test double"

    def reconstruct(self, update, knowledge, ctx):
        return [Reconstruction(torch.zeros(3, knowledge.num_features), torch.zeros(3, 3), 3)]


@pytest.mark.parametrize("workers", [0, 1])
def test_rows_say_which_granted_hints_the_attack_read(tmp_path, workers):
    attacks = {"random": RandomGuess(), "ignores_hints": IgnoresHints()}
    runner, update, _ = make_runner(tmp_path, attacks, ["threat.label=true", f"attack.workers={workers}"])
    runner([update])
    runner.close()
    rows = {r["attack"]: r for r in read_rows(tmp_path)}
    for row in rows.values():  # granted to both
        assert row["hint_node_count"] is True and row["hint_label"] is True
    assert rows["random"]["read_node_count"] is True and rows["random"]["read_label"] is False
    assert rows["ignores_hints"]["read_node_count"] is False and rows["ignores_hints"]["read_label"] is False


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


def test_clients_per_round_attacks_a_seeded_sample_of_the_rounds_updates():
    from server.attack_runner import sampled

    config = load_config(None, ["data.dataset=synthetic", "attack.clients_per_round=2"])
    updates = [ObservedUpdate(round=r, client_key=c, global_weights={}, returned={}, kind="gradient", num_examples=1,
                              metrics={}, lr=0.01, local_steps=1, batch_size=1) for r in (1, 2) for c in range(10)]
    first, second = sampled(config, updates[:10]), sampled(config, updates[10:])
    assert len(first) == len(second) == 2
    assert sampled(config, updates[:10]) == first  # the same draw for the same (seed, round)
    assert [u.client_key for u in first] == sorted(u.client_key for u in first)  # in the round's order
    assert sampled(config, updates[:2]) == updates[:2]
    assert sampled(load_config(None, ["data.dataset=synthetic"]), updates[:10]) == updates[:10]


def test_information_gain_is_positive_when_the_attack_knows_more_than_the_prior(tmp_path):
    from attacks.priors import AuxMeanAdjacency, AuxSample, MajorityType

    priors = {"aux_mean_adjacency": AuxMeanAdjacency(), "majority_type": MajorityType(), "aux_sample": AuxSample()}
    runner, update, _ = make_runner(tmp_path, {"random": RandomGuess(), **priors})
    runner([update])
    rows = {r["attack"]: r for r in read_rows(tmp_path)}
    for alignment in ("identity", "matched", "gsm"):
        for metric in ("adj_auc", "adj_ap", "edge_accuracy", "node_type_accuracy", "feature_mse"):
            column = f"{alignment}_{metric}"
            # the prior beside every row is the best of the prior rows (the same draws), scored alike
            values = [rows[name][column] for name in priors]
            best = min(values) if metric == "feature_mse" else max(values)
            for row in rows.values():
                assert row[f"prior_{column}"] == pytest.approx(best)
                # + = knows more: value - prior where higher is better, prior - value for errors
                sign = -1 if metric == "feature_mse" else 1
                assert row[f"gain_{column}"] == pytest.approx(sign * (row[column] - best))
    entry = next(s for s in summarize(read_rows(tmp_path))
                 if s["attack"] == "random" and s["alignment"] == "identity")
    assert entry["gain_adj_auc_mean"] == pytest.approx(
        rows["random"]["identity_adj_auc"] - rows["random"]["prior_identity_adj_auc"])
    assert entry["prior_adj_auc_mean"] == pytest.approx(rows["random"]["prior_identity_adj_auc"])


class PrepareFails(Attack):
    name, paper, keeps_state = "prepare_fails", "test double", True

    def prepare(self, updates, knowledge, ctx):
        raise RuntimeError("decoder exploded")

    def reconstruct(self, update, knowledge, ctx):
        raise RuntimeError("still broken")


def test_a_failing_per_round_preparation_does_not_stop_the_round(tmp_path):
    runner, update, _ = make_runner(tmp_path, {"prepare_fails": PrepareFails(), "random": RandomGuess()})
    runner([update])
    rows = {r["attack"]: r for r in read_rows(tmp_path)}
    assert rows["prepare_fails"]["status"] == "error" and rows["random"]["status"] == "ok"


class Recorder(list):
    def __call__(self, outcome):
        self.append(outcome)


class OneForTheBatch(Attack):
    name, paper = "one_for_batch", "test double"
    batch_output = "one_for_batch"

    def reconstruct(self, update, knowledge, ctx):
        return RandomGuess().reconstruct(update, knowledge.with_hints(node_counts=[5]), ctx)


class ReturnsNone(Attack):
    name, paper = "returns_none", "test double"

    def reconstruct(self, update, knowledge, ctx):
        return None


def test_the_runner_records_outcomes_and_never_reads_the_audit(tmp_path):
    """Alone (no evaluator), the runner needs no run directory: it hands each call's outcome on,
    with the knowledge that call had; one output for a batch is repeated for each of its graphs."""
    _, update, scenario = make_runner(tmp_path, {})
    config = load_config(None, ["data.dataset=synthetic", "federation.num_clients=2"])
    knowledge = attacker_knowledge(config, scenario)
    batch = ObservedUpdate(round=1, client_key=0, global_weights=update.global_weights,
                           returned=update.returned, kind="gradient", num_examples=3, metrics={},
                           lr=0.01, local_steps=1, batch_size=3)
    granted = []
    recorder = Recorder()
    runner = AttackRunner(config, {"one_for_batch": OneForTheBatch(), "returns_none": ReturnsNone()}, knowledge,
                          lambda u, name: granted.append(name) or knowledge, recorder)
    runner([batch])
    runner.close()
    by_attack = {o.attack: o for o in recorder}
    assert granted == ["one_for_batch", "returns_none"]
    assert by_attack["one_for_batch"].status == "ok" and len(by_attack["one_for_batch"].reconstructions) == 3
    assert by_attack["returns_none"].status == "invalid_output"
    assert by_attack["returns_none"].message == "returned NoneType, not a list of Reconstruction"
    assert all(o.seconds >= 0 and o.update is batch for o in recorder)


class PrepareRaises(Attack):
    name, paper = "prepare_raises", "test double"
    keeps_state = True

    def prepare(self, updates, knowledge, ctx):
        raise RuntimeError("decoder diverged\nsecond line")

    def reconstruct(self, update, knowledge, ctx):
        return RandomGuess().reconstruct(update, knowledge, ctx)


def test_a_failed_preparation_makes_the_rounds_rows_errors(tmp_path):
    runner, update, _ = make_runner(tmp_path, {"prepare_raises": PrepareRaises(), "random": RandomGuess()})
    runner([update])
    runner.close()
    rows = {r["attack"]: r for r in read_rows(tmp_path)}
    assert rows["prepare_raises"]["status"] == "error"
    assert rows["prepare_raises"]["message"] == "prepare() failed this round: RuntimeError: decoder diverged"
    assert rows["random"]["status"] == "ok"


class PrepareRaisesAndNeverApplies(PrepareRaises):
    name = "prepare_raises_never_applies"

    def not_applicable(self, update, knowledge):
        return "needs auxiliary graphs (threat.aux_graphs=true)"


def test_a_call_that_does_not_apply_keeps_its_reason_whatever_its_preparation_did(tmp_path):
    runner, update, _ = make_runner(tmp_path, {"prepare_raises_never_applies": PrepareRaisesAndNeverApplies()})
    runner([update])
    runner.close()
    row, = read_rows(tmp_path)
    assert (row["status"], row["message"]) == ("not_applicable", "needs auxiliary graphs (threat.aux_graphs=true)")


class CountsAux(Attack):
    name, paper = "counts_aux", "test double"
    seen: list = []

    def reconstruct(self, update, knowledge, ctx):
        CountsAux.seen.append(len(knowledge.aux_graphs))
        return RandomGuess().reconstruct(update, knowledge, ctx)


@pytest.mark.parametrize("granted", [True, False])
def test_threat_aux_graphs_false_hides_them_from_the_attacks_but_not_from_the_priors(tmp_path, granted):
    CountsAux.seen = []
    runner, update, _ = make_runner(tmp_path, {"counts_aux": CountsAux()}, [f"threat.aux_graphs={granted}"])
    runner([update])
    runner.close()
    row, = read_rows(tmp_path)
    assert (CountsAux.seen[0] > 0) is granted and row["aux"] == ("same:holdout" if granted else "none")
    assert row["prior_identity_adj_auc"] == row["prior_identity_adj_auc"]  # the priors scored with them
