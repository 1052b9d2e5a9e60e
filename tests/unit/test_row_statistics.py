"""Row statistics: failures counted in one line; a mean and its gain over the same graphs."""

import pytest

from fedgraph_sim.rows.statistics import faults


def test_failed_turns_of_unattacked_rounds_are_in_the_warning():
    assert faults([], []) == ""
    assert faults([{"status": "ok"}], ["non-finite update: 'w' holds NaN or inf", "RuntimeError: boom"]) == (
        "warning: 2 client turn(s) failed over the run, 1 of them a non-finite update left out of the "
        "aggregate (log.txt)")


def test_faults_are_one_warning_line():
    rows = [{"status": "ok"}, {"status": "client_failed"}, {"status": "crashed"}, {"status": "client_failed"},
            {"status": "not_applicable"}, {"status": "failed"}]
    assert faults(rows) == ("warning: 3 row(s) record a failure (2 client_failed, 1 crashed); each row's "
                            "message says why (the run's results)")
    assert faults([{"status": "ok"}, {"status": "timeout"}]) == ""


def _row(status, value=None, prior=0.25, graph_id=0, **extra):
    """A row of one attacked graph: ``value`` for every GRAIN and identity-AUC column when scored."""
    from fedgraph_sim.metrics import ALIGNMENTS

    row = {"dataset": "d", "attack": "a", "defense": "none", "status": status, "graph_id": graph_id,
           "hint_features": False, "hint_adjacency": False, **extra}
    for alignment in ALIGNMENTS:
        for name in ("gsm0", "full_iso", "adj_auc"):
            column = f"{alignment}_{name}"
            row[f"prior_{column}"] = prior
            if value is not None:
                row[column], row[f"gain_{column}"] = value, value - prior
    return row


def test_every_table_cell_shows_a_mean_and_a_gain_over_the_same_graphs():
    """The cell's mean minus its prior is its gain, for metrics summarised over scored graphs and
    for those that count failures as 0 (the failed graphs' priors are in the gain too)."""
    from fedgraph_sim.report.tables import metric_cell
    from fedgraph_sim.rows.statistics import summarize

    rows = [_row("ok", 1.0, prior=0.5, graph_id=1), _row("ok", 0.5, prior=0.0, graph_id=2),
            _row("failed", prior=0.25, graph_id=3), _row("not_applicable", graph_id=4)]
    (entry, *_) = summarize(rows)
    # failures as 0 over the three attacked graphs: mean 0.5, prior 0.25, gain 0.25
    assert entry["full_iso_all_mean"] == pytest.approx(0.5)
    assert entry["prior_full_iso_all_mean"] == pytest.approx(0.25)
    assert entry["gain_full_iso_all_mean"] == pytest.approx(0.25)
    assert metric_cell(entry, "full_iso") == "50.0 [0.0, 100.0] [Δ +25.0 vs 25.0]"
    # scored graphs only: mean 0.75, prior 0.25, gain 0.5
    assert (entry["adj_auc_mean"], entry["prior_adj_auc_mean"], entry["gain_adj_auc_mean"]) == \
        pytest.approx((0.75, 0.25, 0.5))
    for name in ("gsm0", "full_iso", "adj_auc"):
        cell = metric_cell(entry, name, style="compact")
        assert "(" in cell  # every cell here has its gain


def test_no_gain_is_shown_when_some_graphs_of_the_mean_have_no_prior():
    from fedgraph_sim.rows.statistics import mean_and_gain

    rows = [_row("ok", 1.0, prior=0.5), _row("ok", 0.5, prior=0.0, hint_adjacency=True)]
    out = mean_and_gain(rows, "adj_auc", "identity")
    assert out["mean"] == pytest.approx(0.75) and out["count"] == 2
    assert out["gain"] != out["gain"] and out["prior"] != out["prior"]  # NaN: not over fewer graphs
