"""The evaluator: the only reader of the audit store; rows, priors, gains and drawings."""

import json

import pytest
import torch

from attacks.random_guess import RandomGuess
from fedgraph_sim.audit import AuditRecord, AuditStore
from fedgraph_sim.config import load_config
from fedgraph_sim.evaluation import Evaluator, ThreatGrants
from fedgraph_sim.rows.store import read_rows
from fedgraph_sim.runtime.session import build_priors
from fedgraph_sim.scenario import attacker_knowledge, build_scenario
from fedgraph_sim.threat import AttackOutcome, ObservedUpdate


def _case(tmp_path, overrides=()):
    config = load_config(None, ["data.dataset=synthetic", "federation.num_clients=2", "output.drawings=1",
                                *overrides])
    scenario = build_scenario(config)
    graphs = [scenario.dataset.graphs[int(i)] for i in scenario.clients[0][:2]]
    AuditStore(tmp_path).write(AuditRecord(1, 0, graphs, 1))
    weights = {"w": torch.zeros(1).numpy()}
    update = ObservedUpdate(round=1, client_key=0, global_weights=weights, returned=weights, kind="gradient",
                            num_examples=2, metrics={"defense-epsilon": 1.5}, lr=0.01, local_steps=1, batch_size=2)
    return config, attacker_knowledge(config, scenario), update, graphs


def test_rows_score_each_graph_with_the_prior_and_gain_beside_each_metric(tmp_path):
    config, knowledge, update, graphs = _case(tmp_path)
    evaluator = Evaluator(config, tmp_path, knowledge, build_priors(config))
    hinted = knowledge.with_hints(node_counts=[g.num_nodes for g in graphs])
    recs = RandomGuess().reconstruct(update, hinted, _Ctx())
    rows = evaluator(AttackOutcome("random", update, hinted, "ok", reconstructions=recs, seconds=2.0))
    assert [r.graph_id for r in rows] == [int(g.graph_id) for g in graphs]
    written = read_rows(tmp_path)
    assert len(written) == 2 and written[0]["seconds"] == 1.0  # the call's time split over its graphs
    row = written[0]
    assert row["defense_epsilon"] == 1.5 and row["hint_node_count"] is True
    for alignment in ("identity", "matched", "gsm"):
        for name in ("adj_auc", "node_type_accuracy"):  # higher is closer: gain = value - prior
            column = f"{alignment}_{name}"
            assert row[f"gain_{column}"] == pytest.approx(row[column] - row[f"prior_{column}"])
        column = f"{alignment}_spectral_distance"  # lower is closer: gain = prior - value
        assert row[f"gain_{column}"] == pytest.approx(row[f"prior_{column}"] - row[column])
    assert len(list((tmp_path / "drawings").glob("*.json"))) == 1  # output.drawings=1


@pytest.mark.parametrize("order", ["original", "shuffled"])
def test_an_attack_that_returns_a_priors_output_gains_nothing_under_any_alignment(tmp_path, order):
    """The prior of every metric is the best gradient-free guess scored as the attack is: an
    attack that returns a prior's own output never shows a positive gain, under any alignment,
    and the best of them shows exactly 0 on every metric (no alignment lends it a gain)."""
    from fedgraph_sim.threat import attack_seed
    from fedgraph_sim.metrics import PRIORS, all_metrics

    config, knowledge, _, graphs = _case(tmp_path, [f"data.node_order={order}"])
    priors = build_priors(config)
    gains = {}
    for i, graph in enumerate(graphs):
        update = ObservedUpdate(round=1 + i, client_key=0, global_weights={}, returned={}, kind="gradient",
                                num_examples=1, metrics={}, lr=0.01, local_steps=1, batch_size=1)
        AuditStore(tmp_path).write(AuditRecord(1 + i, 0, [graph], 1))
        hinted = knowledge.with_hints(node_counts=[graph.num_nodes])
        evaluator = Evaluator(config, tmp_path / f"{i}", knowledge, priors, audit_dir=tmp_path)
        for name, prior in priors.items():
            recs = prior(update, hinted, attack_seed(config.seed, update.round, 0, name))
            (row,) = evaluator(AttackOutcome(name, update, hinted, "ok", reconstructions=recs))
            for column, gain in row.scores.items():
                if column.startswith("gain_"):
                    gains.setdefault((i, column), []).append(gain)
    columns = {column for _, column in gains}
    assert {f"gain_{a}_{m.name}" for a in ("identity", "matched", "gsm") for m in all_metrics()
            if m.name not in ("target_rnmse",)} <= columns
    assert sum(any(v == v for v in values) for values in gains.values()) >= 2 * 3 * 15  # defined ones
    for key, values in gains.items():
        assert len(values) == len(PRIORS)
        defined = [v for v in values if v == v]  # NaN where the metric is undefined (precision, no edge)
        if defined:
            assert max(defined) == pytest.approx(0.0, abs=1e-9), key


def test_no_gain_is_credited_for_a_part_the_threat_model_handed_over(tmp_path):
    from torch_geometric.utils import to_dense_adj

    from fedgraph_sim.threat import Reconstruction

    config, knowledge, update, graphs = _case(tmp_path, ["data.node_order=shuffled"])  # no same-size twin in order
    evaluator = Evaluator(config, tmp_path, knowledge, build_priors(config))
    truth = [to_dense_adj(g.edge_index, max_num_nodes=g.num_nodes)[0] for g in graphs]
    hinted = knowledge.with_hints(node_counts=[g.num_nodes for g in graphs], features=[g.x for g in graphs])
    recs = [Reconstruction(g.x, a, g.num_nodes) for g, a in zip(graphs, truth)]  # X granted, A recovered
    (row, _) = evaluator(AttackOutcome("glg", update, hinted, "ok", reconstructions=recs, seconds=1.0))
    assert row.hint_features and not row.hint_adjacency
    assert "gain_identity_feature_mse" not in row.scores and "identity_feature_mse" in row.priors
    assert "gain_identity_node_type_accuracy" not in row.scores
    assert row.scores["gain_identity_adj_auc"] > 0  # the recovered part keeps its gain


def test_unscored_rows_carry_the_status_and_no_metrics(tmp_path):
    config, knowledge, update, _ = _case(tmp_path)
    evaluator = Evaluator(config, tmp_path, knowledge, build_priors(config))
    short = RandomGuess().reconstruct(update, knowledge.with_hints(node_counts=[5]), _Ctx())
    rows = evaluator(AttackOutcome("random", update, knowledge, "ok", reconstructions=short))
    # one graph returned for a batch of two: scored against the graph it matches, the other failed
    assert sorted(r.status for r in rows) == ["failed", "ok"]
    unmatched = next(r for r in rows if r.status == "failed")
    assert "returned 1 graphs for 2; none was matched" in unmatched.message and not unmatched.scored
    assert unmatched.priors  # attempted: it counts 0 beside its priors
    failed = evaluator(AttackOutcome("random", update, knowledge, "failed", "no candidate",
                                     info={"rank_1": 4, "stage": "t0", "skipped": [1, 2]}))
    assert all(r.status == "failed" and "identity_adj_auc" not in r.as_dict() for r in failed)
    # the attack's diagnostics say how far it got (only what fits a row)
    assert all(r.as_dict()["info_rank_1"] == 4 and "info_skipped" not in r.as_dict() for r in failed)
    # an attempted graph keeps the priors' values, so failures counted as 0 meet their priors
    assert all("prior_gsm_full_iso" in r.as_dict() for r in failed)


class _Ctx:
    seed = 0

    def generator(self):
        return torch.Generator().manual_seed(0)


def test_threat_grants_give_each_attack_only_its_hints(tmp_path):
    config, knowledge, update, graphs = _case(tmp_path, ["attack.names=[random,dlg@A]",
                                                         "threat.adjacency_known=[dlg@A]", "threat.label=true"])
    grants = ThreatGrants(config.threat, AuditStore(tmp_path), knowledge)
    plain, granted = grants(update, "random"), grants(update, "dlg@A")
    assert plain.node_counts == tuple(g.num_nodes for g in graphs) and plain.labels is not None
    assert plain.adjacencies is None and granted.adjacencies is not None
    assert torch.equal(granted.adjacencies[0].sum(), torch.tensor(float(graphs[0].edge_index.size(1))))
    assert plain.features is None and granted.features is None


def test_the_features_grant_hands_the_true_features_to_the_listed_attacks_only(tmp_path):
    config, knowledge, update, graphs = _case(tmp_path, ["attack.names=[random,dlg]", "threat.features_known=[dlg]"])
    grants = ThreatGrants(config.threat, AuditStore(tmp_path), knowledge)
    assert grants(update, "random").features is None
    granted = grants(update, "dlg").features
    assert len(granted) == len(graphs) and all(torch.equal(f, g.x) for f, g in zip(granted, graphs))


def test_a_batch_of_reconstructions_is_assigned_to_its_graphs():
    from fedgraph_sim.data import make_synthetic
    from fedgraph_sim.evaluation.batch import batch_assignment
    from fedgraph_sim.threat import Reconstruction
    from torch_geometric.utils import to_dense_adj

    data = make_synthetic(num_graphs=12, seed=3)
    graphs = [data.graphs[i] for i in (0, 5, 9)]
    exact = [Reconstruction(g.x, to_dense_adj(g.edge_index, max_num_nodes=g.num_nodes)[0], g.num_nodes)
             for g in graphs]
    shuffled = [exact[2], exact[0], exact[1]]
    assert batch_assignment(shuffled, graphs, data.schema) == [1, 2, 0]
    assert batch_assignment(exact[:1], graphs[:1], data.schema) == [0]  # one graph: nothing to assign
    assert batch_assignment([exact[2]], graphs, data.schema) == [None, None, 0]  # fewer: the rest get none


def test_the_first_exact_reconstruction_is_kept_renumbered_onto_the_truth(tmp_path):
    from torch_geometric.utils import to_dense_adj

    from fedgraph_sim.threat import Reconstruction

    config, knowledge, update, graphs = _case(tmp_path, ["output.drawings=1"])
    evaluator = Evaluator(config, tmp_path, knowledge, build_priors(config))
    hinted = knowledge.with_hints(node_counts=[g.num_nodes for g in graphs])
    recs = []
    for g in graphs:  # the truth in another node order: exact, but not in identity alignment
        perm = torch.randperm(g.num_nodes, generator=torch.Generator().manual_seed(1))
        adj = to_dense_adj(g.edge_index, max_num_nodes=g.num_nodes)[0]
        recs.append(Reconstruction(g.x[perm], adj[perm][:, perm], g.num_nodes))
    rows = evaluator(AttackOutcome("perm", update, hinted, "ok", reconstructions=recs))
    assert all(r.scores["gsm_full_iso"] == 1.0 for r in rows)
    drawing = json.loads((tmp_path / "drawings" / "perm_exact.json").read_text())
    assert drawing["exact"] and drawing["alignment"] == "gsm"
    assert drawing["rec_types"] == drawing["true_types"]
    rec_edges = {(i, j) for i, row in enumerate(drawing["rec_adj"]) for j, v in enumerate(row) if v > 0.5}
    assert rec_edges == {tuple(e) for e in zip(*drawing["true_edge_index"])}
    assert sorted(p.name for p in (tmp_path / "drawings").iterdir()) == ["perm_0.json", "perm_exact.json"]
