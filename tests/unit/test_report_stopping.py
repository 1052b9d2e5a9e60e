"""The cheapest defense setting that stops the exact attack, from hand-made rows."""

import math

import pytest

from fedgraph_sim.report.groups import group_rows
from fedgraph_sim.report.stopping import stopping_table, verdicts

ACCURACY = {"none": 0.90, "dp_gradients(sigma=1e-06)": 0.89, "dp_gradients(sigma=0.001)": 0.85,
            "dp_gradients(sigma=0.1)": 0.60, "prune(p=0.5)": 0.88, "prune(p=0.9)": 0.80,
            "dp_sgd(noise_multiplier=1.0)": 0.70}


def _row(attack, defense, graph_id, full, status="ok", setting="", epsilon=None):
    family, _, rest = defense.partition("(")
    strength = float(rest.rstrip(")").split("=")[1]) if rest else 0.0
    row = {"run": f"fed-{setting}-{defense}", "dataset": "toy", "seed": 0, "graph_id": graph_id, "attack": attack,
           "defense": defense, "defense_family": family, "defense_strength": strength,
           "defense_param": rest.split("=")[0] if rest else None, "setting": setting, "status": status,
           "test_accuracy": ACCURACY[defense], "defense_epsilon": epsilon,
           "prior_identity_full_repo": 0.0}  # a failed row carries its graph's prior too
    if status in ("ok", "timeout"):
        row.update({"identity_gsm0": 1.0, "identity_full_repo": full})
    return row


def _federation(defense, exact, graphs=10, failed=0, setting="", epsilon=None, attack="grain"):
    """``exact`` of ``graphs`` rebuilt, ``failed`` of the rest failed (no reconstruction), the prior
    beside it on every graph."""
    rows = []
    for i in range(graphs):
        status = "failed" if exact <= i < exact + failed else "ok"
        rows.append(_row(attack, defense, i, 1.0 if i < exact else 0.0, status, setting, epsilon))
        rows.append(_row("aux_sample", defense, i, 0.0, "ok", setting, epsilon))
    return rows


def test_the_most_accurate_setting_under_the_threshold_is_the_cheapest():
    rows = (_federation("none", 7) + _federation("dp_gradients(sigma=1e-06)", 5)
            + _federation("dp_gradients(sigma=0.001)", 0, failed=10) + _federation("dp_gradients(sigma=0.1)", 0))
    (verdict,) = verdicts(group_rows(rows))
    assert verdict.family == "dp_gradients" and verdict.undefended.value == pytest.approx(0.7)
    # sigma 1e-3 and 0.1 both stop it (failures count as 0); 1e-3 keeps more accuracy
    assert verdict.cheapest.defense == "dp_gradients(sigma=0.001)"
    assert verdict.cheapest.value == 0.0 and verdict.cost == pytest.approx(0.05)
    table = stopping_table(group_rows(rows))
    assert "| toy | - | dp_gradients | 70.0% (grain) | 0.900 | dp_gradients(sigma=0.001) | 0.0% (grain) | 0.850 | " \
           "+0.050 | - |" in table


def test_one_exact_graph_in_a_hundred_is_not_stopped():
    rows = _federation("none", 30, graphs=100) + _federation("prune(p=0.9)", 1, graphs=100)
    (verdict,) = verdicts(group_rows(rows))
    assert verdict.cheapest is None and verdict.strongest.value == pytest.approx(0.01)
    assert "none stops it (at prune(p=0.9)) | 1.0% (grain)" in stopping_table(group_rows(rows))


def test_the_best_attack_decides_and_priors_never_do():
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
    assert verdict.cheapest.attack == "grain" and verdict.cheapest.epsilon == 3.5
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
        row.pop("identity_full_repo")
    assert stopping_table(group_rows(rows)) == ""


def test_a_two_class_task_shows_the_auc_and_its_cost_beside_the_accuracy():
    rows = _federation("none", 5) + _federation("prune(p=0.9)", 0)
    for row in rows:  # accuracy pinned at the majority class, the ranking learned less under pruning
        row["test_auc"] = 0.80 if row["defense"] == "none" else 0.65
    (verdict,) = verdicts(group_rows(rows))
    assert verdict.auc_cost == pytest.approx(0.15)
    assert "| 0.900 (AUC 0.800) | prune(p=0.9) | 0.0% (grain) | 0.800 (AUC 0.650) | +0.100 (AUC +0.150) | - |" \
        in stopping_table(group_rows(rows))
