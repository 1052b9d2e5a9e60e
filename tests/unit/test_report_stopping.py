"""The cheapest defense setting shown to stop the exact attacks, by the one stop rule, from
hand-made rows: no exact graph in at least 59 returned reconstructions against a leak of the
undefended federation on the same seeds and rounds, by a one-sided Fisher exact test."""

import math

import pytest

from fedgraph_sim.report.groups import group_rows
from fedgraph_sim.report.stopping import stopping_table, verdicts

ACCURACY = {"none": 0.90, "dp_gradients(sigma=1e-06)": 0.89, "dp_gradients(sigma=0.001)": 0.85,
            "dp_gradients(sigma=0.1)": 0.60, "prune(p=0.5)": 0.88, "prune(p=0.9)": 0.80,
            "dp_sgd(noise_multiplier=1.0)": 0.70}


def _row(attack, defense, graph_id, exact, status="ok", setting="", epsilon=None):
    family, _, rest = defense.partition("(")
    strength = float(rest.rstrip(")").split("=")[1]) if rest else 0.0
    row = {"run": f"fed-{setting}-{defense}", "dataset": "toy", "seed": 0, "round": 1, "graph_id": graph_id,
           "attack": attack, "defense": defense, "defense_family": family, "defense_strength": strength,
           "defense_param": rest.split("=")[0] if rest else None, "setting": setting, "status": status,
           "test_accuracy": ACCURACY[defense], "defense_epsilon": epsilon}
    if status == "ok":
        row["gsm_full_iso"] = exact
    return row


def _federation(defense, exact, graphs=60, failed=0, setting="", epsilon=None, attack="grain"):
    """``exact`` of ``graphs`` rebuilt, ``failed`` of the rest failed (no reconstruction), a prior
    beside every graph."""
    rows = []
    for i in range(graphs):
        status = "failed" if exact <= i < exact + failed else "ok"
        rows.append(_row(attack, defense, i, 1.0 if i < exact else 0.0, status, setting, epsilon))
        rows.append(_row("aux_sample", defense, i, 1.0, "ok", setting, epsilon))  # a prior never counts
    return rows


def test_the_most_accurate_setting_that_stops_is_the_cheapest_and_a_failed_attack_is_no_evidence():
    rows = (_federation("none", 20) + _federation("dp_gradients(sigma=1e-06)", 5)
            + _federation("dp_gradients(sigma=0.001)", 0, failed=60) + _federation("dp_gradients(sigma=0.1)", 0))
    (verdict,) = verdicts(group_rows(rows))
    assert verdict.family == "dp_gradients" and verdict.undefended.cell["exact"] == 20
    # sigma 1e-3's calls all failed: not measured, never a stop; 0.1 found nothing in 60: it stops
    assert verdict.cheapest.defense == "dp_gradients(sigma=0.1)" and verdict.cheapest.claim == "stops"
    assert verdict.cost == pytest.approx(0.30)
    table = stopping_table(group_rows(rows))
    assert "| toy | - | dp_gradients | leaks: 20 of 60 [23-46%] | 0.900 | dp_gradients(sigma=0.1) | no leak found " \
           "0 of 60 [rate < 5%] (stops (p = 1.4e-07)) | 0.600 | +0.300 | - |" in table


def test_no_leak_in_too_few_graphs_is_undecided_never_a_stop():
    rows = _federation("none", 30) + _federation("prune(p=0.9)", 0, graphs=40)
    (verdict,) = verdicts(group_rows(rows))
    assert verdict.cheapest is None and verdict.strongest.claim == "undecided"
    assert "none shown (at prune(p=0.9)) | undecided at 40: no leak found in 0 of 40 [rate < 7%] (undecided (p = " \
        in stopping_table(group_rows(rows))


def test_one_exact_graph_is_a_leak_and_the_best_attack_decides():
    rows = _federation("none", 30) + _federation("prune(p=0.9)", 1)
    (verdict,) = verdicts(group_rows(rows))
    assert verdict.cheapest is None and verdict.strongest.claim == "leaks"
    rows = (_federation("none", 5) + _federation("prune(p=0.5)", 0) + _federation("prune(p=0.5)", 3, attack="glg")
            + _federation("prune(p=0.9)", 0))
    (verdict,) = verdicts(group_rows(rows))
    assert verdict.cheapest.defense == "prune(p=0.9)"  # p=0.5 stops GRAIN but not GLG
    rows = _federation("none", 5) + [_row("aux_sample", "prune(p=0.5)", i, 0.0) for i in range(10)]
    assert [v.family for v in verdicts(group_rows(rows))] == []  # no attack was run on the defended graphs


def test_an_attack_that_does_not_apply_counts_neither_way():
    rows = _federation("none", 5) + _federation("dp_sgd(noise_multiplier=1.0)", 0, epsilon=3.5)
    rows += [_row("glg", "dp_sgd(noise_multiplier=1.0)", i, None, "not_applicable", epsilon=3.5) for i in range(10)]
    (verdict,) = verdicts(group_rows(rows))
    assert verdict.cheapest.claim == "stops" and verdict.cheapest.epsilon == 3.5
    assert stopping_table(group_rows(rows)).rstrip().endswith("| +0.200 | 3.5 |")


def test_training_settings_are_judged_apart_and_without_accuracy_the_weakest_wins():
    rows = []
    for setting in ("steps_1", "batch_4"):
        rows += _federation("none", 5, setting=setting)
        rows += _federation("prune(p=0.5)", 0 if setting == "steps_1" else 2, setting=setting)
        rows += _federation("prune(p=0.9)", 0, setting=setting)
    for row in rows:
        row["test_accuracy"] = None
    found = {v.setting: v for v in verdicts(group_rows(rows))}
    assert found["steps_1"].cheapest.defense == "prune(p=0.5)" and math.isnan(found["steps_1"].cost)
    assert found["batch_4"].cheapest.defense == "prune(p=0.9)"


def test_rows_without_exact_scores_give_no_section():
    rows = [{**_row("graphdlg", "none", 0, None), "identity_node_type_accuracy": 0.5},
            {**_row("graphdlg", "prune(p=0.9)", 0, None), "identity_node_type_accuracy": 0.4}]
    for row in rows:
        row.pop("gsm_full_iso")
    assert stopping_table(group_rows(rows)) == ""


def test_a_two_class_task_shows_the_auc_and_its_cost_beside_the_accuracy():
    rows = _federation("none", 5) + _federation("prune(p=0.9)", 0)
    for row in rows:  # accuracy pinned at the majority class, the ranking learned less under pruning
        row["test_auc"] = 0.80 if row["defense"] == "none" else 0.65
    (verdict,) = verdicts(group_rows(rows))
    assert verdict.auc_cost == pytest.approx(0.15)
    assert "| 0.800 (AUC 0.650) | +0.100 (AUC +0.150) | - |" in stopping_table(group_rows(rows))
