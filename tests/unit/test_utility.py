import pytest
import torch
from torch_geometric.data import Batch

from fedgraph_sim.data.synthetic import make_synthetic
from fedgraph_sim.models import GraphClassifier, evaluate
from fedgraph_sim.utility import final_utility, with_utility, write_utility


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


def test_final_utility_is_the_last_round_of_a_short_run(tmp_path):
    assert final_utility(tmp_path) == {}
    write_utility(tmp_path, 0, {"test_accuracy": 0.5, "test_loss": 0.5})
    assert final_utility(tmp_path)["test_accuracy"] == 0.5  # only the initial model was evaluated
    for round_, acc in ((2, 0.8), (1, 0.6)):
        write_utility(tmp_path, round_, {"test_accuracy": acc, "test_loss": 1 - acc})
    assert final_utility(tmp_path) == {"test_accuracy": 0.8, "test_loss": pytest.approx(0.2)}


def test_final_utility_is_the_mean_over_the_last_tenth_of_the_rounds(tmp_path):
    for round_ in range(0, 21):  # 20 trained rounds: the mean over rounds 19 and 20
        write_utility(tmp_path, round_, {"test_accuracy": 0.5 if round_ < 19 else 0.6 + 0.1 * (round_ - 19),
                                         "test_loss": float(round_)})
    assert final_utility(tmp_path) == {"test_accuracy": pytest.approx(0.65), "test_loss": pytest.approx(19.5)}
    assert with_utility([{"a": 1}], {"test_accuracy": 0.8}) == [{"a": 1, "test_accuracy": 0.8}]


def test_auc_ranks_the_class_1_score_and_is_absent_with_one_class():
    graphs = make_synthetic(num_graphs=12, seed=0).graphs
    model = GraphClassifier(4, 2)
    metrics = evaluate(model, graphs)
    logits, y = model.logits_and_targets(Batch.from_data_list(graphs))
    score = (logits[:, 1] - logits[:, 0]).detach()
    positives, negatives = score[y == 1], score[y == 0]
    # the AUC is the chance a positive outscores a negative (ties half)
    pairs = ((positives[:, None] > negatives[None, :]).double()
             + 0.5 * (positives[:, None] == negatives[None, :]).double())
    assert metrics["test_auc"] == pytest.approx(float(pairs.mean()))
    one_class = [g for g in graphs if int(g.y) == 0]
    assert "test_auc" not in evaluate(model, one_class) and "test_accuracy" in evaluate(model, one_class)


def test_a_sealed_run_keeps_its_utility_in_parquet_beside_the_results(tmp_path):
    """Sealing a run moves ``utility.jsonl`` into ``utility.parquet``; every reader gets the same
    rows and the same final utility from either, and a run sealed before utility was (only the
    JSON lines) still reads."""
    from fedgraph_sim.rows.store import ResultWriter, seal
    from fedgraph_sim.utility import read_utility

    for round_ in range(0, 12):
        write_utility(tmp_path, round_, {"test_accuracy": 0.5 + round_ / 100, "test_loss": float("nan") if round_ == 3
                                         else 1.0 / (round_ + 1), "test_graphs": 20})
    ResultWriter(tmp_path).write({"attack": "grain", "status": "ok"})
    streamed, final = read_utility(tmp_path), final_utility(tmp_path)
    assert seal(tmp_path) == tmp_path / "results.parquet"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.parquet", "utility.parquet"]
    assert repr(read_utility(tmp_path)) == repr(streamed) and final_utility(tmp_path) == final
    assert final == {"test_accuracy": pytest.approx(0.61), "test_loss": pytest.approx(1 / 12)}

    old = tmp_path / "old"  # an earlier version's run: results sealed, utility left in JSON lines
    old.mkdir()
    for row in streamed:
        write_utility(old, row["round"], {k: v for k, v in row.items() if k != "round"})
    assert repr(read_utility(old)) == repr(streamed) and final_utility(old) == final


def test_a_run_without_result_rows_still_seals_its_utility(tmp_path):
    from fedgraph_sim.rows.store import seal
    from fedgraph_sim.utility import read_utility

    write_utility(tmp_path, 0, {"test_accuracy": 0.5})
    assert seal(tmp_path) is None  # no result rows to move
    assert [p.name for p in tmp_path.iterdir()] == ["utility.parquet"]
    assert read_utility(tmp_path) == [{"round": 0, "test_accuracy": 0.5}]
