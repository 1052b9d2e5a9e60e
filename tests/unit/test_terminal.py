"""Terminal tables: sized to the width, constant labels moved to the title, nothing cut."""

import io
import math

from rich.console import Console

from fedgraph_sim.metrics import shown_in
from fedgraph_sim.report.tables import SUMMARY_LABELS, summary_grid
from fedgraph_sim.report.terminal import fit, print_summary

TERMINAL_METRICS = shown_in("terminal")

LONG = "prune(p=0.9)+dp_gradients(sigma=0.1,noise=gaussian,laplace_param=variance)"


def _entry(dataset, attack, defense="none", test_accuracy=math.nan, epsilon=math.nan, alignment="identity"):
    metrics = {f"{m}_mean": 0.5 for m in ("feature_mse", "node_type_accuracy", "adj_auc", "adj_ap",
                                          "edge_accuracy", "degree_distance", "spectral_distance")}
    gains = {"gain_adj_auc_mean": 0.25, "gain_feature_mse_mean": -0.125}
    return {"dataset": dataset, "attack": attack, "defense": defense, "alignment": alignment, "graphs": 3,
            "failed": 0, **metrics, **gains, "gsm0_all_mean": 0.875, "test_accuracy_mean": test_accuracy,
            "federations": 1, "test_accuracy_std": 0.0, "defense_epsilon_max": epsilon}


def _printed(entries, width):
    out = Console(file=io.StringIO(), width=width)
    print_summary(entries, "title", out)
    return out.file.getvalue()


def _grid(entries):
    return summary_grid(entries, TERMINAL_METRICS, SUMMARY_LABELS, style="compact", utility=True, title="t")


def test_constant_labels_move_to_the_title_and_empty_metrics_go():
    (table,), caption = fit(_grid([_entry("toy", "idlg"), _entry("toy", "dlg")]), 400)
    headers = [c.header for c in table.columns]
    assert headers[:2] == ["attack", "graphs"]  # dataset, defense and alignment are the same everywhere
    assert "dataset: toy" in table.title and "defense: none" in table.title
    assert not {"test acc", "ε", "GSM-2", "FULL"} & set(headers)  # no values anywhere
    assert "GSM-0" in headers
    assert "GSM-2" not in caption and "GSM-0" in caption  # the caption speaks of what is shown


def test_utility_columns_appear_when_informative():
    (table,), _ = fit(_grid([_entry("toy", "idlg", test_accuracy=0.8125), _entry("MUTAG", "idlg", epsilon=2.5)]), 400)
    headers = [c.header for c in table.columns]
    assert headers[0] == "dataset" and headers[-2:] == ["test acc", "ε"]


def test_cells_carry_the_gain_with_one_sign_convention():
    text = _printed([_entry("toy", "idlg"), _entry("toy", "dlg")], 400)
    assert "0.500 (+0.250)" in text  # AUC above its prior
    assert "0.500 (-0.125)" in text  # feature MSE: the gain is prior - value, negative = worse than the prior
    assert "87.5%" in text  # GSM-0 in percent over every attacked graph


def test_a_narrow_terminal_splits_the_metrics_and_never_cuts_a_label():
    entries = [_entry("toy", "inverting_gradients", LONG), _entry("toy", "dlg", "none")]
    for width in (60, 100, 160):
        text = _printed(entries, width)
        assert "…" not in text  # rich's mark of a cut cell
        assert all(len(line) <= width for line in text.splitlines())
        for table in fit(_grid(entries), width)[0]:
            assert all(c.overflow == "fold" and not c.no_wrap for c in table.columns)  # wrapped, not cut
    (wide,), _ = fit(_grid(entries), 400)
    assert LONG in _printed(entries, 400)
    narrow, _ = fit(_grid(entries), 60)
    assert len(narrow) > 1 and all(t.columns[0].header == "attack" for t in narrow)
    assert sum(len(t.columns) - 2 for t in narrow) >= len(TERMINAL_METRICS) - 2  # every shown metric once


def test_a_diverged_attack_keeps_its_cells_short():
    from fedgraph_sim.report.tables import metric_cell

    entry = {"feature_mse_mean": 537_119.25, "gain_feature_mse_mean": -537_119.18}
    assert metric_cell(entry, "feature_mse", "compact") == "5.37e+05 (-5.37e+05)"


def test_the_job_progress_of_sweeps_and_audits_shows_each_task_and_clears_when_done():
    from rich.progress import MofNCompleteColumn, SpinnerColumn, TimeElapsedColumn

    from fedgraph_sim.report.terminal import console, job_progress

    progress = job_progress(console())
    kinds = {type(c) for c in progress.columns}
    assert {SpinnerColumn, MofNCompleteColumn, TimeElapsedColumn} <= kinds and progress.live.transient
