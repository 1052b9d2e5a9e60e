"""The audit's facts from rows: each verdict cell's outcome (leaks, no leak found, not measured)
with its count, interval and calls' fates, gains over the priors, attacks that did not apply
with their reasons, the what-if's stop claims and the cheapest stop, and the verdict in words."""

import math

from fedgraph_sim.report.audit_facts import (LEAKS, NOT_MEASURED, applicability, audit_facts, cheapest_stop, gains,
                                             verdict_lines, what_if)
from fedgraph_sim.runtime.commands.audit import failing

PLAN = {"config": {"name": "mine"}, "rounds": [1, 3], "budget": {}, "levels": ["update", "hints"],
        "level_text": {"update": "the update alone", "hints": "the update and hints"}}


def row(attack, exact=None, status="ok", level="hints", round=1, setting="", seed=0, **extra):
    return {"attack": attack, "status": status, "threat_level": level, "round": round, "setting": setting,
            "gsm_full_iso": exact, "graph_id": 0, "seed": seed, **extra}


def trained(accuracy: dict[str, list[float]]) -> list[dict]:
    """What-if federations: setting -> its accuracy at seeds 0, 1, ..."""
    return [{"setting": s, "seed": i, "accuracy": a} for s, values in accuracy.items() for i, a in enumerate(values)]


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


def test_a_stop_is_claimed_only_against_a_leak_on_the_same_units_with_enough_graphs_to_decide():
    own = [row("grain", 1.0, setting="as configured")] * 8
    others = ([row("grain", 0.0, setting="dp", defense_epsilon=3.0)] * 59  # decided, p tiny: stops
              + [row("grain", 0.0, setting="few")] * 20  # p tiny but 0 of 20 bounds nothing: undecided
              + [row("grain", 1.0, setting="prune")]
              + [row("grain", status="not_applicable", setting="secagg")])
    federations = trained({"as configured": [0.8, 0.82, 0.78], "dp": [0.7, 0.72, 0.68], "few": [0.79] * 3,
                           "prune": [0.79] * 3, "secagg": [0.8] * 3})
    settings = what_if(own + others, federations)
    assert [s["setting"] for s in settings] == ["as configured", "dp", "few", "prune", "secagg"]
    mine, dp, few, prune, secagg = settings
    assert mine["best"]["exact"] == 8 and mine["stop"] is None and mine["accuracy_cost"] is None
    assert dp["stop"] == "stops" and dp["stop_p"] < 0.05 and dp["against"]["exact"] == 8
    assert math.isclose(dp["accuracy_cost"]["mean"], 0.1) and dp["accuracy_cost"]["seeds"] == 3
    assert dp["accuracy_cost"]["ci"][0] == dp["accuracy_cost"]["ci"][1] or dp["accuracy_cost"]["ci"][0] < 0.1
    assert math.isclose(mine["accuracy"]["mean"], 0.8) and mine["accuracy"]["ci"][0] < 0.8 < mine["accuracy"]["ci"][1]
    assert dp["epsilon"] == 3.0
    assert few["stop"] == "undecided" and few["stop_p"] < 0.05 and not few["stops"]
    assert prune["stop"] == LEAKS and secagg["stop"] == NOT_MEASURED and not secagg["stops"]
    assert cheapest_stop(settings)["setting"] == "dp"  # not secagg, which measured nothing, nor few


def test_a_setting_not_attacked_says_why_a_more_accurate_stop_or_the_wall_budget():
    own = [row("grain", 1.0, setting="as configured")] * 8
    others = [row("grain", 0.0, setting="prune")] * 60
    federations = trained({"as configured": [0.8], "prune": [0.79], "dp": [0.6], "batch": [0.85]})
    mine, prune, dp, batch = what_if(own + others, federations)
    assert prune["stops"] and dp["best"]["reason"].startswith("not attacked: prune, as accurate or more, already stops")
    assert dp["best"]["skipped"] and dp["stop"] == NOT_MEASURED
    assert "wall budget" in batch["best"]["reason"] and not batch["best"]["skipped"]  # more accurate: a real gap


def test_a_what_if_that_only_timed_out_or_crashed_is_not_measured_and_fails_unmeasured():
    rows = [row("grain", 1.0, round=1)] * 4 + [row("grain", 1.0, setting="as configured")] * 4
    rows += [row("grain", None, status="timeout", setting="dp"), row("grain", None, status="crashed", setting="dp"),
             row("grain", 0.0, setting="diverged")]
    federations = trained({"as configured": [0.8], "dp": [0.7], "diverged": [float("nan")]})
    facts = audit_facts(rows, [], {**PLAN, "rounds": [1], "levels": ["hints"]}, None, federations)
    own, dp, diverged = facts["what_if"]
    assert dp["best"]["outcome"] == NOT_MEASURED and dp["stop"] == NOT_MEASURED
    assert diverged["best"]["outcome"] == NOT_MEASURED and "diverged" in diverged["best"]["reason"]
    assert facts["cheapest_stop"] is None
    assert failing(facts, "unmeasured") and failing(facts, "no-stop") and failing(facts, "exact")


def test_a_cell_the_audit_chose_not_to_attack_is_not_measured_and_does_not_fail_unmeasured():
    rows = [row("grain", 1.0, round=1), row("grain", 0.0, round=3)]
    reasons = {"update": {"3": "not attacked: nothing rebuilt at the strongest level"}}
    facts = audit_facts(rows + [row("grain", 1.0, level="update")], [], {**PLAN, "not_attacked": reasons})
    skipped = facts["levels"]["update"]["rounds"]["3"]
    assert skipped["outcome"] == NOT_MEASURED and skipped["skipped"] and "nothing rebuilt" in skipped["reason"]
    assert not failing(facts, "unmeasured")


def test_the_verdict_says_three_outcomes_with_counts_and_the_stop_with_its_test_and_cost_interval():
    rows = [row("grain", 1.0, level="hints", round=1)] * 6 + [
        row("grain", 0.0, level="hints", round=3), row("grain", status="not_applicable", level="update",
                                                       message="needs hints")]
    rows += [row("grain", 1.0, setting="as configured", seed=s) for s in (0, 1, 2) for _ in range(2)]
    rows += [row("grain", 0.0, setting="dp", seed=s) for s in (0, 1, 2) for _ in range(20)]
    federations = trained({"as configured": [0.8, 0.8, 0.8], "dp": [0.75, 0.74, 0.76]})
    facts = audit_facts(rows, [{"round": 1, "test_accuracy": 0.5}], {**PLAN, "majority_rate": 0.66}, None,
                        federations)
    lines = verdict_lines(facts)
    assert lines[0] == "From the update alone: not measured in any round: no attack applies."
    assert "round 1: leaks: 6 of 6 graphs rebuilt exactly by grain (95% CI" in lines[1]
    assert "round 3: undecided at 1: no leak found in 0 of 1 graphs (grain; the rate may still be up to 95%" in lines[1]
    assert lines[2].startswith("The cheapest tried setting that stops the exact attacks (round 1, 3 seeds) is dp: "
                               "no leak found: 0 of 60 graphs")
    assert "against leaks: 6 of 6 graphs" in lines[2]
    assert "as configured on the same seeds and rounds (one-sided Fisher exact p = 1.1e-08)" in lines[2]
    assert lines[2].endswith("at a test-accuracy cost of +5.0 points [+2.5, +7.5], 3 seeds.")
    assert lines[3] == ("As configured, the global model's test accuracy is 0.80 [0.80, 0.80] over 3 seeds; always "
                        "predicting the majority class scores 0.66.")
    assert lines[-1].startswith("An audit finds leaks; it cannot prove their absence")


def test_the_exact_attacks_and_their_rounds_are_read_at_the_hints_level():
    from fedgraph_sim.report.audit_facts import exact_attacks

    rows = [row("grain", 0.0, round=1), row("grain", 1.0, round=3), row("grain@ext", 1.0, round=3),
            row("dlg", 0.0, round=1), row("glg", 1.0, round=1, level="update"),  # not at hints: not counted
            row("aux_sample", 1.0, round=2)]  # a prior never counts
    assert exact_attacks(rows) == (["grain", "grain@ext"], [3])
    assert exact_attacks([row("grain", 0.0)]) == ([], [])


def test_a_stop_claim_compares_with_the_federation_as_configured_on_the_same_seeds_and_rounds_only():
    own = [row("grain", 1.0, setting="as configured", round=3, seed=1)] + \
          [row("grain", 0.0, setting="as configured", round=1, seed=0)] * 3
    others = [row("grain", 0.0, round=3, setting="dp", seed=1)]
    mine, dp = what_if(own + others, trained({"as configured": [0.8, 0.8], "dp": [0.7, 0.7]}))
    assert (dp["against"]["exact"], dp["against"]["attacked"]) == (1, 1)  # seed 1's round 3 only
    assert dp["stop"] == "undecided"  # 0 of 1 against 1 of 1: too few graphs to claim a stop


def test_a_settings_dp_claim_stands_beside_its_canaries_bound_and_a_refuted_one_is_said_first():
    rows = [row("grain", 1.0, setting="as configured")] * 4 + [row("grain", 0.0, setting="dp")] * 4
    federations = trained({"as configured": [0.8], "dp": [0.7]})
    checked = {"kind": "gradient", "count": 1000, "delta": 1e-5, "epsilon_claimed": 0.8, "epsilon_lower_bound": 2.59,
               "claim_refuted": True, "guesses": 200, "correct": 196, "scores": [0.1] * 1000}
    facts = audit_facts(rows, [], PLAN, None, federations, {"dp": checked})
    mine, dp = facts["what_if"]
    assert mine["claim_check"] is None and dp["claim_check"]["epsilon_lower_bound"] == 2.59
    assert "scores" not in dp["claim_check"]  # canaries.json keeps them
    refuted = [line for line in verdict_lines(facts) if line.startswith("DP CLAIM REFUTED")]
    assert refuted == ["DP CLAIM REFUTED for dp: its canaries show epsilon >= 2.59 where it claims 0.8: the defense "
                       "or its accountant is wrong."]


def test_caught_counts_the_crafted_updates_a_client_flagged():
    from fedgraph_sim.report.audit_facts import caught

    rows = [{"round": 1, "client": -1, "defense_crafted_flag": 1.0, "attack": a} for a in ("grain", "random")]
    rows += [{"round": 3, "client": -1, "defense_crafted_flag": 0.0, "attack": "grain"}]
    assert caught(rows) == {"flagged": 1, "updates": 2}  # one per update, not per row
    assert caught([{"round": 1, "client": 0, "defense_crafted_flag": float("nan")}]) is None  # no check ran
    assert caught([]) is None
