"""The audit's facts from rows: the best attack's exact count per level and round with its
interval, gains over the priors, attacks that did not apply with their reasons, the what-if and
its cheapest stopping setting, and the verdict in words."""

import math

from fedgraph_sim.report.audit_facts import (applicability, audit_facts, best_attack, cheapest_stop, gains,
                                             verdict_lines, what_if)

PLAN = {"config": {"name": "mine"}, "rounds": [1, 3], "budget": {}, "levels": ["update", "hints"],
        "level_text": {"update": "the update alone", "hints": "the update and hints"}}


def row(attack, exact=None, status="ok", level="hints", round=1, setting="", **extra):
    return {"attack": attack, "status": status, "threat_level": level, "round": round, "setting": setting,
            "gsm_full_iso": exact, "graph_id": 0, **extra}


def test_the_best_attack_is_the_one_with_the_most_exact_graphs_failures_counting_zero():
    rows = [row("grain", 1.0), row("grain", 1.0), row("grain", None, status="timeout"), row("grain", 0.0),
            row("dlg", 0.0), row("dlg", 0.0), row("majority_type", 1.0),  # a prior never counts
            row("glg", status="not_applicable")]
    best = best_attack(rows)
    assert (best["attack"], best["exact"], best["attacked"], best["rate"]) == ("grain", 2, 4, 0.5)
    low, high = best["ci"]
    assert 0 <= low < 0.5 < high <= 1


def test_no_attacked_graph_has_no_best_attack():
    assert best_attack([row("glg", status="not_applicable"), row("aux_sample", 1.0)]) is None


def test_gains_average_each_attacks_gain_over_the_prior_with_an_interval():
    rows = [row("grain", 1.0, gain_gsm_gsm2=0.5), row("grain", 0.0, gain_gsm_gsm2=0.1),
            row("dlg", 0.0, gain_gsm_gsm2=float("nan"))]
    out = gains(rows)
    assert math.isclose(out["grain"]["gsm_gsm2"]["mean"], 0.3) and out["grain"]["gsm_gsm2"]["graphs"] == 2
    assert out["grain"]["gsm_gsm2"]["ci"][0] <= 0.3 <= out["grain"]["gsm_gsm2"]["ci"][1]
    assert out["dlg"]["gsm_gsm2"]["mean"] is None  # no finite gain: no number made up


def test_an_attack_that_never_applied_keeps_the_strongest_levels_reason():
    rows = [row("glg", status="not_applicable", level="update", message="needs the node-count hint"),
            row("glg", status="not_applicable", level="hints", message="needs one graph"),
            row("grain", status="not_applicable", level="update", message="x"), row("grain", 0.0, level="hints")]
    out = applicability(rows)
    assert out["glg"] == {"levels": [], "reason": "needs one graph", "applies": False}
    assert out["grain"] == {"levels": ["hints"], "reason": None, "applies": True}


def test_what_if_compares_each_setting_with_the_users_own_in_round_1_at_the_hints_level():
    base = [row("grain", 1.0, test_accuracy=0.8), row("grain", 1.0, round=3, test_accuracy=0.8),
            row("grain", 0.0, level="update", test_accuracy=0.8)]
    others = [row("grain", 0.0, setting="dp", test_accuracy=0.7, defense_epsilon=3.0),
              row("grain", 1.0, setting="prune", test_accuracy=0.79),
              row("grain", status="not_applicable", setting="secagg", test_accuracy=0.78)]
    settings = what_if(others, base)
    assert [s["setting"] for s in settings] == ["as configured", "dp", "prune", "secagg"]
    own, dp, prune, secagg = settings
    assert own["best"]["exact"] == 1 and own["best"]["attacked"] == 1 and not own["stops"]
    assert dp["stops"] and math.isclose(dp["accuracy_cost"], 0.1) and dp["epsilon"] == 3.0
    assert not prune["stops"] and secagg["stops"] and secagg["best"] is None
    assert cheapest_stop(settings)["setting"] == "secagg"  # the most accurate that stops


def test_the_verdict_names_counts_intervals_rounds_and_the_cheapest_stop():
    rows = [row("grain", 1.0, level="hints", round=1, test_accuracy=0.8), row("grain", 0.0, level="hints", round=1),
            row("grain", 0.0, level="hints", round=3), row("grain", status="not_applicable", level="update",
                                                           message="needs hints")]
    rows += [row("grain", 0.0, setting="dp", test_accuracy=0.75)]
    facts = audit_facts(rows, [{"round": 1, "test_accuracy": 0.5}], PLAN)
    lines = verdict_lines(facts)
    assert lines[0] == "From the update alone, no registered attack applies: nothing was attacked."
    assert "1 of 2 graphs exactly (95% CI" in lines[1] and "at round 1 (grain)" in lines[1]
    assert "0 of 1 graphs exactly" in lines[1] and "at round 3" in lines[1]
    assert lines[2] == "The cheapest tried setting that stops the exact attacks (round 1) is dp (0 of 1 graphs " \
                       "rebuilt, against 1 of 2 as configured), at a cost of 5.0 points of test accuracy."


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
