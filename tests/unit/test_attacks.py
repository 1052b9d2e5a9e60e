import numpy as np
import pytest
import torch
from torch_geometric.utils import to_dense_adj

from attacks.base import Attack, AttackContext, Budget
from attacks.common import (DummyGraphs, GradientMatcher, Schedule, idlg_label, label_from_bias, minimise,
                            symmetric_adjacency)
from attacks.idlg import classifier_gradients
from clients.training import fedsgd_gradient
from fedgraph_sim import registry
from fedgraph_sim.data import make_synthetic
from fedgraph_sim.errors import ConfigError
from fedgraph_sim.metrics import graph_metrics
from fedgraph_sim.models import GraphClassifier
from fedgraph_sim.threat import AttackerKnowledge, ObservedUpdate

DATA = make_synthetic(num_graphs=40, min_nodes=6, max_nodes=8, seed=1)


def observe(model, graphs, model_kwargs=None):
    grad, _ = fedsgd_gradient(model, graphs)
    update = ObservedUpdate.fedsgd(model, grad, len(graphs))
    knowledge = AttackerKnowledge(model=model_kwargs or {}, num_features=4, num_classes=2,
                                  schema=DATA.schema).with_hints(node_counts=[g.num_nodes for g in graphs])
    return update, knowledge


def ctx(seed=0):
    return AttackContext(seed=seed, budget=Budget(120))


def dense_truth(g):
    return to_dense_adj(g.edge_index, max_num_nodes=g.num_nodes)[0]


def test_symmetric_adjacency_is_symmetric_in_unit_interval_with_zero_diagonal():
    a = symmetric_adjacency(torch.randn(15), 6)
    assert torch.equal(a, a.t()) and a.diagonal().abs().sum() == 0
    assert (a >= 0).all() and (a <= 1).all()


@pytest.mark.parametrize("conv", ["gcn", "gat", "sage"])
def test_matching_objective_vanishes_at_the_true_graph(conv):
    torch.manual_seed(0)
    model = GraphClassifier(4, 2, conv=conv).double()
    g = DATA.graphs[0].clone()
    g.x = g.x.double()
    update, _ = observe(model, [g])
    matcher = GradientMatcher(model, update.gradient)
    mask = torch.ones(1, g.num_nodes, dtype=torch.bool)
    at_truth = matcher(g.x[None], dense_truth(g).double()[None], mask, g.y)
    wrong = dense_truth(g).double().clone()
    wrong[0, -1] = wrong[-1, 0] = 1 - wrong[0, -1]
    assert float(at_truth) < 1e-20
    assert float(matcher(g.x[None], wrong[None], mask, g.y)) > 1e3 * float(at_truth)


@pytest.mark.parametrize("optimizer", ["lbfgs", "lbfgs_wolfe", "adam"])
def test_optimisers_drive_the_gradient_distance_down(optimizer):
    torch.manual_seed(0)
    model = GraphClassifier(4, 2)
    g = DATA.graphs[1]
    update, _ = observe(model, [g])
    matcher = GradientMatcher(model, update.gradient, "l2" if optimizer == "lbfgs" else "cosine")
    draw = lambda gen: DummyGraphs.free([g.num_nodes], 4, gen)  # noqa: E731
    start = float(matcher(*draw(torch.Generator().manual_seed(0)).dense(), g.y))
    schedule = {"lbfgs": Schedule(optimizer="lbfgs", iterations=30, lr=1.0),
                "lbfgs_wolfe": Schedule(optimizer="lbfgs", iterations=30, lr=1.0, line_search="strong_wolfe"),
                "adam": Schedule(iterations=100, lr=0.1)}[optimizer]
    fit = minimise(draw, lambda d: matcher(*d.dense(), g.y), ctx(), schedule, torch.Generator().manual_seed(0))
    assert fit.objective < start / 10


def test_dlg_guards_are_off_in_paper_mode_and_reach_the_schedule():
    dlg = registry.attacks.get("dlg")
    assert dlg().schedule().divergence == float("inf") and dlg().schedule().line_search is None
    assert dlg(divergence_guard=10).schedule().divergence == 10
    with pytest.raises(ConfigError, match="divergence_guard"):
        dlg(divergence_guard=0.5)
    assert not dlg().schedule().signed and dlg(optimizer="adam", signed=True).schedule().signed
    with pytest.raises(ConfigError, match="signed: the sign trick needs optimizer: adam"):
        dlg(signed=True)


def test_dlg_with_granted_features_and_adam_fits_only_the_structure():
    torch.manual_seed(0)
    model = GraphClassifier(4, 2)
    g = DATA.graphs[0]
    update, knowledge = observe(model, [g])
    attack = registry.attacks.get("dlg")(features="granted", optimizer="adam", iterations=20, lr=0.01,
                                         discretize=True)
    assert "threat.features_known" in attack.not_applicable(update, knowledge)
    granted = knowledge.with_hints(node_counts=[g.num_nodes], features=[g.x])
    assert attack.not_applicable(update, granted) is None
    (rec,) = attack.reconstruct(update, granted, ctx())
    assert torch.equal(rec.x, DATA.schema.encode(DATA.schema.decode(g.x)))  # the grant, discretised as is
    assert set(rec.adj.unique().tolist()) <= {0.0, 1.0}
    with pytest.raises(ConfigError, match="optimizer"):
        registry.attacks.get("dlg")(optimizer="sgd")


def test_dlg_plus_bp_is_the_plain_variants_own_fit_binarised():
    torch.manual_seed(0)
    g = DATA.graphs[0]
    update, knowledge = observe(GraphClassifier(4, 2), [g])
    knowledge = knowledge.with_hints(node_counts=[g.num_nodes], features=[g.x])
    fits = {}
    params = dict(features="granted", optimizer="adam", iterations=20, lr=0.01)
    (plain,) = registry.attacks.get("dlg")(**params).reconstruct(update, knowledge,
                                                                 AttackContext(7, Budget(60), fits=fits))
    (bp,) = registry.attacks.get("dlg")(**params, discretize=True).reconstruct(update, knowledge,
                                                                               AttackContext(7, Budget(60), fits=fits))
    assert 0 < float(plain.adj.triu(1).max()) < 1 and torch.equal(bp.adj, (plain.adj >= 0.5).float())


def test_label_rules_are_exact_for_batch_size_one():
    torch.manual_seed(0)
    model = GraphClassifier(4, 2)
    for g in DATA.graphs[:10]:
        update, knowledge = observe(model, [g])
        weight, bias = classifier_gradients(update, knowledge)
        assert label_from_bias(bias) == [int(g.y)]
        assert idlg_label(weight) == int(g.y)  # ReLU + mean pooling: non-negative FC input


def test_inverting_gradients_boxes_features_into_the_unit_interval():
    torch.manual_seed(0)
    model = GraphClassifier(4, 2)
    update, knowledge = observe(model, DATA.graphs[:2])
    recs = registry.attacks.get("inverting_gradients")(iterations=3).reconstruct(update, knowledge, ctx())
    assert [r.num_nodes for r in recs] == [g.num_nodes for g in DATA.graphs[:2]]
    assert all((r.x >= 0).all() and (r.x <= 1).all() for r in recs)


def test_attacks_are_deterministic_per_seed():
    torch.manual_seed(0)
    model = GraphClassifier(4, 2)
    update, knowledge = observe(model, DATA.graphs[:1])
    attack = registry.attacks.get("dlg")(iterations=3)
    a, b = (attack.reconstruct(update, knowledge, ctx(7))[0] for _ in range(2))
    assert torch.equal(a.x, b.x) and torch.equal(a.adj, b.adj)


def test_random_baseline_scores_chance():
    """U[0,1] guesses against one-hot truth: MSE 1/3 and AUC 1/2 in expectation (the paper's
    Random row: MSE .33, AUC .49-.50)."""
    torch.manual_seed(0)
    model = GraphClassifier(4, 2)
    scores = []
    for i, g in enumerate(DATA.graphs):
        update, knowledge = observe(model, [g])
        rec, = registry.attacks.get("random")().reconstruct(update, knowledge, ctx(i))
        scores.append(graph_metrics(rec.x, rec.adj, g.x, dense_truth(g)))
    assert np.mean([s["feature_mse"] for s in scores]) == pytest.approx(1 / 3, abs=0.03)
    assert np.mean([s["adj_auc"] for s in scores]) == pytest.approx(0.5, abs=0.06)


def test_unknown_attack_parameter_is_refused():
    from fedgraph_sim.errors import ConfigError

    with pytest.raises(ConfigError, match=r"attack.params.dlg.iters: not a parameter of dlg; valid: "):
        registry.attacks.get("dlg")(iters=5)
    with pytest.raises(ConfigError, match="unknown attack 'nope'; valid attacks: ") as info:
        registry.attacks.get("nope")
    for name in ("random", "dlg", "idlg", "inverting_gradients", "graphdlg", "majority_type"):
        assert name in str(info.value)


@pytest.mark.parametrize("params, message", [
    ({"iterations": -5}, "attack.params.dlg.iterations: must be a finite number >= 0 (got -5)"),
    ({"iterations": 2.5}, "attack.params.dlg.iterations: must be a whole number (got 2.5)"),
    ({"lr": float("inf")}, "attack.params.dlg.lr: must be a finite number >= 0 (got inf)"),
    ({"lr": "fast"}, "attack.params.dlg.lr: must be a finite number >= 0 (got 'fast')"),
    ({"line_search": "armijo"}, "attack.params.dlg.line_search: unknown 'armijo'; valid: none, strong_wolfe"),
])
def test_attack_parameters_of_the_wrong_kind_are_refused(params, message):
    from fedgraph_sim.errors import ConfigError

    with pytest.raises(ConfigError) as info:
        registry.attacks.get("dlg")(**params)
    assert str(info.value) == message
    assert registry.attacks.get("dlg")(iterations=5.0).params.iterations == 5.0  # a whole float is fine


def test_an_attack_that_prepares_must_declare_that_it_keeps_state():
    with pytest.raises(TypeError, match="keeps_state"):
        class Forgetful(Attack):  # noqa: F841
            name, paper = "forgetful", "test double"

            def prepare(self, updates, knowledge, ctx):
                pass

            def reconstruct(self, update, knowledge, ctx):
                return []
