"""Regression tasks (``data.task_type: regression``): the MSE loss, the config's loss default and
checks, the utility's RMSE and R2, and the attacks that recover a real target."""

import math

import pytest
import torch
from torch_geometric.data import Data
from torch_geometric.utils import dense_to_sparse

from attacks.base import AttackContext, Budget, build_attack
from clients.training import fedsgd_gradient
from fedgraph_sim.config import load_config
from fedgraph_sim.data import make_synthetic
from fedgraph_sim.errors import ConfigError
from fedgraph_sim.rows.record import ResultRow
from fedgraph_sim.models import GraphClassifier, classification_loss, evaluate
from fedgraph_sim.threat import AttackerKnowledge, ObservedUpdate

SCHEMA = make_synthetic(num_graphs=2, seed=0).schema


def ring(n=5, d=6, target=-3.5):
    a = torch.zeros(n, n)
    for i in range(n):
        a[i, (i + 1) % n] = a[(i + 1) % n, i] = 1
    x = torch.eye(n, d)
    return Data(x=x, edge_index=dense_to_sparse(a)[0], y=torch.tensor([target]), num_nodes=n), a


def test_mse_is_the_squared_error_of_the_one_output():
    logits, y = torch.tensor([[1.0], [-2.0]]), torch.tensor([0.5, 1.0])
    assert torch.isclose(classification_loss(logits, y, "mse"), torch.tensor((0.25 + 9.0) / 2))


def test_regression_defaults_the_loss_to_mse_and_rejects_a_classification_loss():
    assert load_config(overrides=["data.task_type=regression"]).train.loss == "mse"
    with pytest.raises(ConfigError, match="train.loss: cross_entropy does not fit data.task_type: regression"):
        load_config(overrides=["data.task_type=regression", "train.loss=cross_entropy"])
    with pytest.raises(ConfigError, match="train.loss: mse does not fit data.task_type: classification"):
        load_config(overrides=["train.loss=mse"])


def test_utility_reports_rmse_and_r2_for_a_regression_model():
    graphs = [ring(target=t)[0] for t in (-1.0, 0.0, 2.0)]
    model = GraphClassifier(6, 1)
    with torch.no_grad():  # a constant prediction of 0: RMSE sqrt(5/3), R2 = 1 - 5 / (sum of (t - 1/3)^2)
        for p in model.parameters():
            p.zero_()
    out = evaluate(model, graphs, "mse")
    assert "test_accuracy" not in out
    assert math.isclose(out["test_rmse"], math.sqrt(5 / 3), rel_tol=1e-6)
    assert math.isclose(out["test_r2"], 1 - 5 / (16 / 9 + 1 / 9 + 25 / 9), rel_tol=1e-6)


def regression_update(graph):
    knowledge = AttackerKnowledge(model=dict(conv="gcn", hidden=32), num_features=graph.x.size(1), num_classes=1,
                                  schema=SCHEMA, loss="mse", task_type="regression")
    torch.manual_seed(0)
    model = knowledge.build_model()
    grad, _ = fedsgd_gradient(model, [graph], loss="mse")
    update = ObservedUpdate.fedsgd(model, grad)
    return update, knowledge


def test_dlg_recovers_a_real_target_when_the_graph_is_granted():
    """With X and A granted the target is the only unknown: MSE's bias gradient 2 (y_hat - y)
    pins it, so the joint optimisation from 0 must land on it."""
    graph, a = ring(target=-3.5)
    update, knowledge = regression_update(graph)
    knowledge = knowledge.with_hints(node_counts=[5], features=[graph.x], adjacencies=[a])
    attack = build_attack("dlg", {"features": "granted", "adjacency": "granted", "optimizer": "adam", "lr": 0.1,
                                  "iterations": 400})
    (rec,) = attack.reconstruct(update, knowledge, AttackContext(seed=0, budget=Budget(60)))
    assert isinstance(rec.label, float) and abs(rec.label - (-3.5)) < 0.05


def test_fedgig_runs_on_a_regression_model_and_a_granted_target_is_used_as_is():
    graph, _ = ring(target=2.0)
    update, knowledge = regression_update(graph)
    knowledge = knowledge.with_hints(node_counts=[5], features=[graph.x], labels=[2.0])
    (rec,) = build_attack("fedgig", {"sr": False, "iterations": 50}).reconstruct(
        update, knowledge, AttackContext(seed=0, budget=Budget(60)))
    assert rec.label == 2.0 and rec.adj.shape == (5, 5)


def test_attacks_that_recover_classes_are_not_applicable_to_regression():
    graph, _ = ring()
    update, knowledge = regression_update(graph)
    knowledge = knowledge.with_hints(node_counts=[5])
    assert "regresses real targets" in build_attack("tableak").not_applicable(update, knowledge)
    assert "regresses real targets" in build_attack("inverting_gradients").not_applicable(update, knowledge)
    assert build_attack("dlg").not_applicable(update, knowledge) is None


def test_a_regression_row_reports_the_target_error_not_a_correct_label():
    fields = {f: None for f in ResultRow.__dataclass_fields__ if f not in
              ("defense_report", "extra", "label_guess", "scores", "priors", "info")}
    row = ResultRow(**{**fields, "label_true": -3.5}, label_guess=-3.0, scores={"adj_auc": 0.5})
    out = row.as_dict()
    assert out["label_correct"] is None and out["label_error"] == 0.5
