import pytest
import torch

from fedgraph_sim.data.synthetic import make_synthetic
from fedgraph_sim.models import GraphClassifier
from fedgraph_sim.utility import evaluate, final_utility, with_utility, write_utility


def test_accuracy_counts_correct_argmax_predictions():
    graphs = make_synthetic(num_graphs=10, seed=0).graphs
    model = GraphClassifier(4, 2)
    with torch.no_grad():  # a classifier that always says class 1
        model.classifier.weight.zero_()
        model.classifier.bias.copy_(torch.tensor([0.0, 1.0]))
    metrics = evaluate(model, graphs)
    expected = sum(int(g.y) == 1 for g in graphs) / len(graphs)
    assert metrics["test_accuracy"] == pytest.approx(expected)
    assert metrics["test_graphs"] == 10


def test_final_utility_is_the_last_round(tmp_path):
    assert final_utility(tmp_path) == {}
    for round_, acc in ((0, 0.5), (2, 0.8), (1, 0.6)):
        write_utility(tmp_path, round_, {"test_accuracy": acc, "test_loss": 1 - acc})
    assert final_utility(tmp_path) == {"test_accuracy": 0.8, "test_loss": pytest.approx(0.2)}
    assert with_utility([{"a": 1}], {"test_accuracy": 0.8}) == [{"a": 1, "test_accuracy": 0.8}]
