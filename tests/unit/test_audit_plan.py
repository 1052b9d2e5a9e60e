"""The audit's plan: the user's federation attacked at three threat levels in its first, middle
and last round by every registered attack (and GRAIN's widened [ext] variant), what-if federations
in round 1 at the strongest level; configs it cannot serve refused by key."""

import pytest

from fedgraph_sim import registry
from fedgraph_sim.config import validate_config
from fedgraph_sim.errors import ConfigError
from fedgraph_sim.metrics import PRIORS
from fedgraph_sim.runtime.audit_plan import (LEVELS, WHAT_IF, AuditBudget, audited_rounds, candidates, plan_audit,
                                              plan_what_if)

USER = {"name": "mine", "data": {"dataset": "synthetic", "options": {"num_graphs": 40}},
        "federation": {"num_clients": 2, "rounds": 5}, "attack": {"names": ["dlg"], "rounds": [3]}}


def test_rounds_are_the_first_the_middle_and_the_last():
    assert audited_rounds(1) == [1]
    assert audited_rounds(2) == [1, 2]
    assert audited_rounds(5) == [1, 3, 5]
    assert audited_rounds(50) == [1, 25, 50]


def test_every_registered_attack_but_the_priors_is_a_candidate_and_grain_also_with_its_ext_options():
    names = candidates()
    assert set(names) == {n for n in registry.attacks.names() if n not in PRIORS} | {"grain@ext"}
    assert names["grain"] == {}  # paper mode
    assert names["grain@ext"] == {"local_steps": True, "batches": True, "noise_aware": True}


def test_the_users_federation_is_attacked_at_every_level_in_its_first_middle_and_last_round():
    sweep = plan_audit(validate_config(USER))
    own, = sweep.federations
    assert own.setting == "" and own.config.attack.names == [] and own.config.attack.rounds == [1, 3, 5]
    assert [c.columns["threat_level"] for c in sweep.cells] == ["hints", "aux", "update"]  # the longest first
    for cell in sweep.cells:
        threat = cell.config.threat
        assert (threat.aux_graphs, threat.node_count, threat.label) == tuple(LEVELS[cell.attack].values())
        assert cell.config.attack.names == list(candidates()) and cell.config.attack.rounds == [1, 3, 5]
        assert cell.config.data == own.config.data and cell.config.train == own.config.train  # the user's
        assert cell.config.attack.params["grain@ext"] == candidates()["grain@ext"]


def test_the_what_ifs_are_attacked_in_round_1_at_the_strongest_level_by_the_given_attacks():
    own = plan_audit(validate_config(USER)).federations[0]
    sweep = plan_what_if(validate_config(USER), ["grain@ext"])
    assert [f.setting for f in sweep.federations] == list(WHAT_IF)
    for fed in sweep.federations:
        cell, = [c for c in sweep.cells if c.federation is fed]
        assert cell.columns == {"threat_level": "hints"} and cell.config.attack.rounds == [1]
        assert cell.config.attack.names == ["grain@ext"] and fed.config.federation == own.config.federation
    by_label = {f.setting: f.config for f in sweep.federations}
    assert by_label["batch_x4"].train.batch_size == 4 * own.config.train.batch_size
    assert by_label["secure_aggregation"].threat.secure_aggregation is True
    assert by_label["prune_0.9"].defenses == [{"name": "prune", "p": 0.9}]


def test_a_what_if_the_federation_already_has_or_cannot_have_is_skipped_with_its_reason():
    sweep = plan_what_if(validate_config({**USER, "threat": {"secure_aggregation": True}}), ["grain"])
    assert "secure_aggregation" not in [f.setting for f in sweep.federations]
    assert sweep.spec["skipped"]["secure_aggregation"] == "the federation already has it"


def test_a_what_if_this_federation_cannot_have_is_skipped_with_its_reason(monkeypatch):
    from fedgraph_sim.runtime import audit_plan

    monkeypatch.setattr(audit_plan, "WHAT_IF", {**WHAT_IF, "prune_2": {"defenses": [{"name": "prune", "p": 2.0}]}})
    sweep = plan_what_if(validate_config(USER), ["grain"])
    assert "prune_2" not in [f.setting for f in sweep.federations]
    assert sweep.spec["skipped"]["prune_2"].startswith("defenses.0.p")


def test_the_plan_is_the_same_for_the_same_config_so_an_audit_resumes():
    first, second = (plan_audit(validate_config(USER), AuditBudget(seconds=5)) for _ in range(2))
    assert first.spec == second.spec and [c.id for c in first.cells] == [c.id for c in second.cells]
    assert "attack" not in first.spec["audit"]  # the user's attack section is the audit's own


@pytest.mark.parametrize("budget, message", [
    (AuditBudget(seconds=0), "--seconds: must be > 0"),
    (AuditBudget(clients=0), "--clients: must be >= 1"),
    (AuditBudget(graphs=0), "--graphs: must be >= 1"),
])
def test_a_bad_budget_is_refused_by_its_option(budget, message):
    with pytest.raises(ConfigError, match=message):
        plan_audit(validate_config(USER), budget)


def test_a_config_the_audit_cannot_serve_is_refused_by_key():
    with pytest.raises(ConfigError, match="threat.per_node_gradients"):
        plan_audit(validate_config({**USER, "threat": {"per_node_gradients": True}}))


def test_the_attacks_and_the_what_if_changes_can_be_narrowed_and_unknown_names_are_refused():
    sweep = plan_audit(validate_config(USER), attacks=["grain@ext", "glg"], what_if=["dp_sgd_nm1"])
    assert all(c.config.attack.names == ["glg", "grain@ext"] for c in sweep.cells)  # in the registry's order
    assert sweep.spec["what_if"] == ["dp_sgd_nm1"] and sweep.spec["attacks"] == ["grain@ext", "glg"]
    narrowed = plan_what_if(validate_config(USER), ["grain@ext"], changes=sweep.spec["what_if"])
    assert [f.setting for f in narrowed.federations] == ["dp_sgd_nm1"]
    with pytest.raises(ConfigError, match="--attacks: 'grain@noise' is not an attack the audit runs; valid: dlg"):
        plan_audit(validate_config(USER), attacks=["grain@noise"])
    with pytest.raises(ConfigError, match="--what-if: unknown change 'dp'; valid: dp_sgd_nm0.1, dp_sgd_nm1"):
        plan_audit(validate_config(USER), what_if=["dp"])


def test_the_description_of_an_audit_names_its_federation_rounds_budget_levels_and_skipped_changes():
    from fedgraph_sim.runtime.audit_plan import LEVEL_TEXT, describe

    config = validate_config(USER)
    sweep = plan_audit(config, AuditBudget(seconds=7))
    what_if = plan_what_if(validate_config({**USER, "threat": {"secure_aggregation": True}}), ["grain"])
    plan = describe(sweep, what_if)
    assert plan["config"]["name"] == "mine" and plan["config"]["clients"] == 2 and plan["rounds"] == [1, 3, 5]
    assert plan["budget"]["seconds"] == 7 and plan["levels"] == list(LEVELS) and plan["level_text"] == LEVEL_TEXT
    assert plan["skipped"] == {"secure_aggregation": "the federation already has it"}
    assert describe(sweep)["skipped"] == {}
