"""The metric catalogue: one declaration per metric, and everything derived from it."""

import pytest

from fedgraph_sim.metrics import CATALOGUE, METRICS, PRIORS, direction_note, metric, prior_note
from fedgraph_sim.metrics.gsm import GSM_METRICS


def test_each_metric_is_declared_once_with_a_unique_header():
    assert len(METRICS) == len(set(METRICS)) == len(CATALOGUE)
    assert len({m.short for m in CATALOGUE}) == len(CATALOGUE)
    assert all(m.better in ("higher", "lower") for m in CATALOGUE)


def test_every_prior_is_a_registered_attack():
    import attacks  # noqa: F401
    from fedgraph_sim import registry

    assert set(PRIORS) == {"majority_type", "aux_mean_adjacency", "aux_sample"}
    assert all(p in registry.attacks for p in PRIORS)


@pytest.mark.parametrize("m", CATALOGUE, ids=lambda m: m.name)
def test_the_prior_is_the_best_of_the_priors_values_in_the_metrics_direction(m):
    assert m.best([0.2, 0.7, 0.5]) == (0.7 if m.better == "higher" else 0.2)


@pytest.mark.parametrize("m", CATALOGUE, ids=lambda m: m.name)
def test_gain_is_positive_when_the_attack_beats_the_prior(m):
    better, worse = (0.9, 0.4) if m.better == "higher" else (0.1, 0.6)
    assert m.gain(better, worse) == pytest.approx(0.5)
    assert m.gain(worse, better) == pytest.approx(-0.5)


def test_grain_metrics_count_failures_and_the_others_do_not():
    assert {m.name for m in CATALOGUE if m.counts_failures} == set(GSM_METRICS)


def test_captions_are_derived_from_the_catalogue():
    assert direction_note(["adj_auc", "feature_mse"]) == ("AUC: higher means more leakage; "
                                                          "feat MSE: lower means more leakage.")
    assert prior_note(["feature_mse", "adj_ap"]) == (
        "the best of majority_type, aux_mean_adjacency, aux_sample on each graph, scored like the attack "
        "(same alignment, same node count), for feat MSE, AP")
    with pytest.raises(KeyError):
        metric("nope")


def test_a_metric_declares_where_it_is_shown():
    from fedgraph_sim.metrics import CATALOGUE, Metric, shown_in
    from fedgraph_sim.report.rounds import LEAKAGE_METRICS
    from fedgraph_sim.report.tables import REPORT_METRICS, TERMINAL_METRICS

    assert TERMINAL_METRICS == tuple(m.name for m in CATALOGUE if "terminal" in m.shown) == shown_in("terminal")
    assert REPORT_METRICS == shown_in("report") and LEAKAGE_METRICS == shown_in("rounds")
    assert "full_iso" in REPORT_METRICS and "degree_distance" not in REPORT_METRICS
    with pytest.raises(ValueError, match="metric x: unknown places \\['readme'\\]; valid: terminal, report, rounds"):
        Metric("x", "X", "higher", "nodes", lambda p: 0.0, shown=("readme",))
