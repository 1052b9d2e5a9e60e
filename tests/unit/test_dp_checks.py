"""The audit's DP checks: which canaries check which claim, a check kept for a resume, and one the
wall budget did not reach said as not measured."""

import json
import time

from fedgraph_sim.runtime.dp_checks import canary_kind, check_claims


def test_each_claim_is_checked_by_the_canaries_of_its_threat_model():
    assert canary_kind({"defenses": [{"name": "dp_sgd", "noise_multiplier": 1.0}]}) == "gradient"
    assert canary_kind({"defenses": [{"name": "flwr_local_dp"}]}) == "gradient"
    assert canary_kind({"defenses": [{"name": "flwr_central_dp"}]}) == "client"
    assert canary_kind({"defenses": [{"name": "prune", "p": 0.9}]}) is None and canary_kind({}) is None


def test_a_check_already_made_is_reused_and_one_past_the_budget_is_not_measured(tmp_path):
    (tmp_path / "1").mkdir()
    made = {"kind": "gradient", "epsilon_lower_bound": 1.5}
    (tmp_path / "1" / "canaries.json").write_text(json.dumps(made))
    settings = {"as configured": {}, "dp": {"defenses": [{"name": "dp_sgd"}]},
                "dp later": {"defenses": [{"name": "dp_sgd"}]}}
    assert check_claims(settings, tmp_path, deadline=time.time() - 1) == {
        "dp": made, "dp later": {"not_measured": "the wall budget ended first"}}
