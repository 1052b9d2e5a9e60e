"""The audit's facts from rows: each verdict cell's outcome (leaks, no leak found, not measured)
with its count, interval and calls' fates, gains over the priors, attacks that did not apply
with their reasons, the what-if's stop claims and the cheapest stop, and the verdict in words."""

import math

from fedgraph_sim.report.audit_facts import (LEAKS, NO_LEAK, NOT_MEASURED, applicability, audit_facts, cell,
                                             cheapest_stop, gains, verdict_lines, what_if)
from fedgraph_sim.runtime.commands.audit import failing

PLAN = {"config": {"name": "mine"}, "rounds": [1, 3], "budget": {}, "levels": ["update", "hints"],
        "level_text": {"update": "the update alone", "hints": "the update and hints"}}


def row(attack, exact=None, status="ok", level="hints", round=1, setting="", **extra):
    return {"attack": attack, "status": status, "threat_level": level, "round": round, "setting": setting,
            "gsm_full_iso": exact, "graph_id": 0, **extra}


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
    assert abs(found["ci"][0]) < 1e-12 and 0.5 < found["ci"][1] < 0.6  # 0 of 3: the rate may still be 56%
    assert cell([row("grain", 0.0)] * 59)["ci"][1] <= 0.062  # 59 graphs: the bound near 5%


def test_failures_and_inapplicable_attacks_are_not_measured_never_evidence():
    failed = cell([row("grain", None, status="timeout"), row("dlg", None, status="crashed"),
                   row("glg", None, status="error")])
    assert failed["outcome"] == NOT_MEASURED and "every call failed" in failed["reason"]
    assert (failed["completed"], failed["failed"], failed["timed_out"]) == (0, 2, 1)
    none = cell([row("glg", status="not_applicable"), row("aux_sample", 1.0)])
    assert none["outcome"] == NOT_MEASURED and none["reason"] == "no attack applies"
    diverged = cell([row("grain", 0.0)], diverged="the federation diverged")
    assert diverged["outcome"] == NOT_MEASURED


def test_gains_average_each_attacks_gain_over_the_prior_with_an_interval():
    rows = [row("grain", 1.0, gain_gsm_gsm2=0.5), row("grain", 0.0, gain_gsm_gsm2=0.1),
            row("dlg", 0.0, gain_gsm_gsm2=float("nan"))]
    out = gains(rows)
    assert math.isclose(out["grain"]["gsm_gsm2"]["mean"], 0.3) and out["grain"]["gsm_gsm2"]["graphs"] == 2
    assert out["grain"]["gsm_gsm2"]["ci"][0] <= 0.3 <= out["grain"]["gsm_gsm2"]["ci"][1]
    assert out["dlg"]["gsm_gsm2"]["mean"] is None  # no finite gain: no number made up


def test_a_failed_call_counts_zero_in_gsm2s_gain_as_in_the_exact_count():
    rows = [row("grain", 1.0, gain_gsm_gsm2=0.6, gain_matched_adj_auc=0.2),
            row("grain", None, status="crashed", prior_gsm_gsm2=0.4, prior_matched_adj_auc=0.7)]
    out = gains(rows)["grain"]
    assert math.isclose(out["gsm_gsm2"]["mean"], 0.1) and out["gsm_gsm2"]["graphs"] == 2  # (0.6 - 0.4) / 2
    assert math.isclose(out["matched_adj_auc"]["mean"], 0.2) and out["matched_adj_auc"]["graphs"] == 1


def test_an_attack_that_never_applied_keeps_the_strongest_levels_reason():
    rows = [row("glg", status="not_applicable", level="update", message="needs the node-count hint"),
            row("glg", status="not_applicable", level="hints", message="needs one graph"),
            row("grain", status="not_applicable", level="update", message="x"), row("grain", 0.0, level="hints")]
    out = applicability(rows)
    assert out["glg"] == {"levels": [], "reason": "needs one graph", "applies": False}
    assert out["grain"] == {"levels": ["hints"], "reason": None, "applies": True}


def test_a_stop_is_claimed_only_against_a_leak_with_enough_graphs_to_tell():
    base = [row("grain", 1.0, test_accuracy=0.8)] * 8 + [row("grain", 1.0, level="update", test_accuracy=0.8)]
    others = ([row("grain", 0.0, setting="dp", test_accuracy=0.7, defense_epsilon=3.0)] * 8
              + [row("grain", 0.0, setting="few", test_accuracy=0.79)]  # 0 of 1 against 8 of 8: p = 0.11
              + [row("grain", 1.0, setting="prune", test_accuracy=0.79)]
              + [row("grain", status="not_applicable", setting="secagg", test_accuracy=0.8)])
    settings = what_if(others, base)
    assert [s["setting"] for s in settings] == ["as configured", "dp", "few", "prune", "secagg"]
    own, dp, few, prune, secagg = settings
    assert own["best"]["exact"] == 8 and own["stop"] is None
    assert dp["stop"] == "stops" and dp["stop_p"] < 0.05 and math.isclose(dp["accuracy_cost"], 0.1)
    assert dp["epsilon"] == 3.0
    assert few["stop"] == "undecided" and few["stop_p"] > 0.05 and not few["stops"]
    assert prune["stop"] == LEAKS and secagg["stop"] == NOT_MEASURED and not secagg["stops"]
    assert cheapest_stop(settings)["setting"] == "dp"  # not secagg, which measured nothing, nor few


def test_a_what_if_that_only_timed_out_or_crashed_is_not_measured_and_fails_unmeasured():
    rows = [row("grain", 1.0, round=1, test_accuracy=0.8)] * 4
    rows += [row("grain", None, status="timeout", setting="dp", test_accuracy=0.7),
             row("grain", None, status="crashed", setting="dp", test_accuracy=0.7),
             row("grain", 0.0, setting="diverged", test_accuracy=float("nan"))]
    facts = audit_facts(rows, [], {**PLAN, "rounds": [1], "levels": ["hints"]})
    own, dp, diverged = facts["what_if"]
    assert dp["best"]["outcome"] == NOT_MEASURED and dp["stop"] == NOT_MEASURED
    assert diverged["best"]["outcome"] == NOT_MEASURED and "diverged" in diverged["best"]["reason"]
    assert facts["cheapest_stop"] is None
    assert failing(facts, "unmeasured") and failing(facts, "no-stop") and failing(facts, "exact")


def test_the_verdict_says_three_outcomes_with_counts_and_the_stop_with_its_test():
    rows = [row("grain", 1.0, level="hints", round=1, test_accuracy=0.8)] * 6 + [
        row("grain", 0.0, level="hints", round=3), row("grain", status="not_applicable", level="update",
                                                       message="needs hints")]
    rows += [row("grain", 0.0, setting="dp", test_accuracy=0.75)] * 6
    facts = audit_facts(rows, [{"round": 1, "test_accuracy": 0.5}], PLAN)
    lines = verdict_lines(facts)
    assert lines[0] == "From the update alone: not measured in any round: no attack applies."
    assert "round 1: leaks: 6 of 6 graphs rebuilt exactly by grain (95% CI" in lines[1]
    assert "round 3: no leak found: 0 of 1 graphs (grain; the rate is below 79% with 95% confidence" in lines[1]
    assert lines[2].startswith("The cheapest tried setting that stops the exact attacks (round 1) is dp: no leak "
                               "found: 0 of 6 graphs")
    assert "one-sided Fisher exact p = 0.00108" in lines[2] and "5.0 points of test accuracy" in lines[2]
    assert lines[-1].startswith("An audit finds leaks; it cannot prove their absence")


def test_the_exact_attacks_and_their_rounds_are_read_at_the_hints_level():
    from fedgraph_sim.report.audit_facts import exact_attacks

    rows = [row("grain", 0.0, round=1), row("grain", 1.0, round=3), row("grain@ext", 1.0, round=3),
            row("dlg", 0.0, round=1), row("glg", 1.0, round=1, level="update"),  # not at hints: not counted
            row("aux_sample", 1.0, round=2)]  # a prior never counts
    assert exact_attacks(rows) == (["grain", "grain@ext"], [3])
    assert exact_attacks([row("grain", 0.0)]) == ([], [])


def test_what_if_compares_with_the_users_own_over_the_same_rounds_and_attacks_only():
    base = [row("grain", 1.0, round=3), row("dlg", 1.0, round=1), row("grain", 0.0, round=1)]
    others = [row("grain", 0.0, round=3, setting="dp")]
    own, dp = what_if(others, base)
    assert own["best"]["exact"] == 1 and own["best"]["attacked"] == 1  # grain in round 3, not dlg, not round 1
    assert dp["stop"] == "undecided"  # 0 of 1 against 1 of 1: too few graphs to claim a stop
