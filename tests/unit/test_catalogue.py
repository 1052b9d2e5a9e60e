"""The metric catalogue: one declaration per metric, and everything derived from it."""

import pytest

from fedgraph_sim.metrics import PRIORS, all_metrics, direction_note, metric, metric_names, prior_note
from fedgraph_sim.metrics.gsm import GSM_METRICS


def test_each_metric_is_declared_once_with_a_unique_header():
    assert len(metric_names()) == len(set(metric_names())) == len(all_metrics())
    assert len({m.short for m in all_metrics()}) == len(all_metrics())
    assert all(m.better in ("higher", "lower") for m in all_metrics())


def test_every_prior_is_a_registered_attack():
    import attacks  # noqa: F401
    from fedgraph_sim import registry

    assert set(PRIORS) == {"majority_type", "aux_mean_adjacency", "aux_sample"}
    assert all(p in registry.attacks for p in PRIORS)


@pytest.mark.parametrize("m", all_metrics(), ids=lambda m: m.name)
def test_the_prior_is_the_best_of_the_priors_values_in_the_metrics_direction(m):
    assert m.best([0.2, 0.7, 0.5]) == (0.7 if m.better == "higher" else 0.2)


@pytest.mark.parametrize("m", all_metrics(), ids=lambda m: m.name)
def test_gain_is_positive_when_the_attack_beats_the_prior(m):
    better, worse = (0.9, 0.4) if m.better == "higher" else (0.1, 0.6)
    assert m.gain(better, worse) == pytest.approx(0.5)
    assert m.gain(worse, better) == pytest.approx(-0.5)


def test_grain_metrics_count_failures_and_the_others_do_not():
    assert {m.name for m in all_metrics() if m.counts_failures} == set(GSM_METRICS)


def test_captions_are_derived_from_the_catalogue():
    assert direction_note(["adj_auc", "feature_mse"]) == ("AUC: higher means more leakage; "
                                                          "feat MSE: lower means more leakage.")
    assert prior_note(["feature_mse", "adj_ap"]) == (
        "the best of majority_type, aux_mean_adjacency, aux_sample on each graph, scored like the attack "
        "(same alignment, same node count), for feat MSE, AP")
    with pytest.raises(KeyError):
        metric("nope")


def test_a_metric_declares_where_it_is_shown():
    from fedgraph_sim.metrics import Metric, shown_in

    assert shown_in("terminal") == tuple(m.name for m in all_metrics() if "terminal" in m.shown)
    assert "full_iso" in shown_in("report") and "degree_distance" not in shown_in("report")
    assert shown_in("rounds") == ("node_type_accuracy", "adj_auc")
    with pytest.raises(ValueError, match="metric x: unknown places \\['readme'\\]; valid: terminal, report, rounds"):
        Metric("x", "X", "higher", "nodes", lambda p: 0.0, shown=("readme",))


@pytest.fixture
def plugged(monkeypatch):
    """The catalogue's plugin list, emptied again after the test."""
    import fedgraph_sim.metrics.catalogue as module

    monkeypatch.setattr(module, "_plugged", [])
    return module


def test_a_registered_metric_follows_the_packages_and_is_found_by_name(plugged):
    from fedgraph_sim.metrics import Metric, register_metric, shown_in

    entry = Metric("node_count_error", "n err", "lower", "nodes", lambda p: 0.0, shown=("terminal",))
    assert register_metric(entry) is entry and register_metric(entry) is entry  # a second import: no change
    assert all_metrics()[-1] is entry and metric("node_count_error") is entry
    assert metric_names()[-1] == "node_count_error" and shown_in("terminal")[-1] == "node_count_error"
    with pytest.raises(ValueError, match="the name or header is taken by adj_auc"):
        register_metric(Metric("auc_again", "AUC", "higher", "structure", lambda p: 0.0))
    with pytest.raises(ValueError, match="part one of nodes, structure"):
        Metric("x", "X", "higher", "labels", lambda p: 0.0)
