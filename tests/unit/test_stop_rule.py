"""The stop rule: a cell's three outcomes (leaks, no leak found, not measured) with its count,
interval and calls' fates, a failed attack never evidence for the defender; and a stop claimed
only on enough graphs, against a leak, by a one-sided Fisher exact test."""

import pytest

from fedgraph_sim.report.stop_rule import LEAKS, NO_LEAK, NOT_MEASURED, cell, stop_claim, unit_rows


def row(attack, exact=None, status="ok", round=1, seed=0):
    return {"attack": attack, "status": status, "round": round, "seed": seed, "gsm_full_iso": exact, "graph_id": 0}


def test_a_leak_is_the_attack_with_the_most_exact_graphs_failures_counting_zero():
    rows = [row("grain", 1.0), row("grain", 1.0), row("grain", None, status="timeout"), row("grain", 0.0),
            row("dlg", 0.0), row("dlg", 0.0), row("majority_type", 1.0),  # a prior never counts
            row("glg", status="not_applicable")]
    leak = cell(rows)
    assert (leak["outcome"], leak["attack"], leak["exact"], leak["attacked"]) == (LEAKS, "grain", 2, 4)
    assert leak["rate"] == 0.5
    assert (leak["completed"], leak["failed"], leak["timed_out"]) == (5, 0, 1)
    low, high = leak["ci"]
    assert 0 <= low < 0.5 < high <= 1


def test_no_leak_found_counts_only_completed_calls_and_gives_the_upper_bound():
    rows = [row("grain", 0.0)] * 3 + [row("grain", None, status="crashed"), row("grain", None, status="timeout")]
    found = cell(rows)
    assert (found["outcome"], found["attacked"], found["failed"], found["timed_out"]) == (NO_LEAK, 3, 1, 1)
    assert found["ci"][0] == 0 and 0.6 < found["ci"][1] < 0.65 and not found["decided"]  # 0 of 3: up to 63%
    assert not cell([row("grain", 0.0)] * 58)["decided"]
    decided = cell([row("grain", 0.0)] * 59)
    assert decided["decided"] and decided["ci"][1] <= 0.05  # 59 graphs: the rate below 5%


def test_failures_and_inapplicable_attacks_are_not_measured_never_evidence():
    failed = cell([row("grain", None, status="timeout"), row("dlg", None, status="crashed"),
                   row("glg", None, status="error")])
    assert failed["outcome"] == NOT_MEASURED and "every call failed" in failed["reason"]
    assert (failed["completed"], failed["failed"], failed["timed_out"]) == (0, 2, 1)
    none = cell([row("glg", status="not_applicable"), row("aux_sample", 1.0)])
    assert none["outcome"] == NOT_MEASURED and none["reason"] == "no attack applies"
    diverged = cell([row("grain", 0.0)], diverged="the federation diverged")
    assert diverged["outcome"] == NOT_MEASURED


def test_a_failed_attack_is_no_evidence_for_the_defender():
    found = cell([row("grain", 0.0)] * 2 + [row("grain", None, status="failed")] * 3)
    assert found["outcome"] == NO_LEAK and found["attacked"] == 2 and found["failed"] == 3
    refused = cell([row("grain", None, status="failed")] * 60)  # GRAIN refusing every noisy update
    assert refused["outcome"] == NOT_MEASURED


@pytest.mark.parametrize("leak, defended, claim", [
    ((8, 8), 59, "stops"),  # decided, and p tiny
    ((8, 8), 58, "undecided"),  # p tiny, but 0 of 58 does not bound the rate below 5%
    ((1, 60), 59, "undecided"),  # decided, but 1 of 60 against 0 of 59 may be chance
])
def test_a_stop_needs_a_decided_no_leak_and_a_significant_difference_from_the_leak(leak, defended, claim):
    exact, n = leak
    own = cell([row("grain", 1.0)] * exact + [row("grain", 0.0)] * (n - exact))
    assert stop_claim(own, cell([row("grain", 0.0)] * defended))[0] == claim


def test_there_is_no_stop_without_a_leak_to_stop_and_a_leak_is_never_one():
    none = cell([row("grain", 0.0)] * 60)
    assert stop_claim(none, none) == ("no leak to stop", None)
    leak = cell([row("grain", 1.0)])
    assert stop_claim(leak, leak) == (LEAKS, None)


def test_the_leak_a_stop_is_compared_with_is_on_the_same_seeds_and_rounds():
    own = [row("grain", 1.0, round=1, seed=0), row("grain", 0.0, round=2, seed=0), row("grain", 1.0, round=1, seed=1)]
    assert unit_rows(own, [row("grain", 0.0, round=1, seed=1)]) == [own[2]]
