"""The audit's plan: the user's federation attacked first at the strongest threat level in its
first, middle and last round by every registered attack (and GRAIN's widened [ext] variant), the
exact attacks first; the weaker levels only by the attacks that rebuilt graphs there, in the rounds
they did; configs it cannot serve refused by key."""

import pytest

from fedgraph_sim import registry
from fedgraph_sim.config import validate_config
from fedgraph_sim.errors import ConfigError
from fedgraph_sim.metrics import PRIORS
from fedgraph_sim.runtime.audit_plan import (LEVELS, AuditBudget, audited_rounds, candidates, plan_audit,
                                              plan_levels)
from fedgraph_sim.runtime.what_if_plan import plan_what_if

USER = {"name": "mine", "data": {"dataset": "synthetic", "options": {"num_graphs": 40}},
        "federation": {"num_clients": 2, "rounds": 5}, "attack": {"names": ["dlg"], "rounds": [3]}}


def test_rounds_are_the_first_the_middle_and_the_last():
    assert audited_rounds(1) == [1]
    assert audited_rounds(2) == [1, 2]
    assert audited_rounds(5) == [1, 3, 5]
    assert audited_rounds(50) == [1, 25, 50]


def test_every_registered_attack_but_the_priors_is_a_candidate_the_exact_ones_first_and_grain_also_with_ext():
    from attacks.base import build_attack

    names = candidates()
    assert set(names) == {n for n in registry.attacks.names() if n not in PRIORS} | {"grain@ext"}
    assert names["grain"] == {}  # paper mode
    assert names["grain@ext"] == registry.attacks.get("grain").audit_options  # the attack's own declaration
    assert {"local_steps", "batches", "noise_aware", "pooled_readout", "unknown_degrees"} <= set(names["grain@ext"])
    assert build_attack("grain@ext").params.pooled_readout and not build_attack("grain").params.pooled_readout
    exact = [build_attack(n.split("@")[0]).exact for n in names]
    assert exact == sorted(exact, reverse=True) and exact[0]  # the attacks that can rebuild exactly run first


def row(attack, exact, round, level="hints", client=0):
    return {"attack": attack, "threat_level": level, "round": round, "gsm_full_iso": exact, "status": "ok",
            "client": client, "graph_id": 0}


def test_the_strongest_level_runs_first_and_alone_in_the_first_middle_and_last_round():
    sweep = plan_audit(validate_config(USER))
    own, = sweep.federations
    assert own.setting == "" and own.config.attack.names == [] and own.config.attack.rounds == [1, 3, 5]
    cell, = sweep.cells
    threat = cell.config.threat
    assert cell.columns == {"threat_level": "hints"}
    assert (threat.aux_graphs, threat.node_count, threat.label) == tuple(LEVELS["hints"].values())
    assert cell.config.attack.names == list(candidates()) and cell.config.attack.rounds == [1, 3, 5]
    assert cell.config.attack.clients_per_round == 2  # each round's first updates
    assert cell.config.data == own.config.data and cell.config.train == own.config.train  # the user's
    assert cell.config.attack.params["grain@ext"] == candidates()["grain@ext"]


def test_rounds_that_decided_nothing_at_the_strongest_level_get_every_other_update_by_the_exact_attacks():
    from fedgraph_sim.runtime.audit_plan import plan_extension

    sweep = plan_audit(validate_config(USER))
    rows = [row("grain@ext", 1.0, 1), row("grain", 0.0, 3, client=1), row("dlg", 0.0, 3, client=1)]
    cells = plan_extension(sweep, rows)  # round 1 leaks: decided; round 3: 0 of 1; round 5: nothing ran
    assert [c.config.attack.rounds for c in cells] == [[3], [5]]
    assert [c.config.attack.clients for c in cells] == [[0], [0, 1]]  # not the updates already attacked
    for cell in cells:
        assert cell.config.attack.names == ["grain", "grain@ext"] and cell.config.attack.clients_per_round is None
        assert cell.columns == {"threat_level": "hints"}
    assert plan_extension(sweep, [row("grain", 1.0, r, client=c) for r in (1, 3, 5) for c in (0, 1)]) == []
    aggregated = plan_audit(validate_config({**USER, "threat": {"secure_aggregation": True}}))
    assert plan_extension(aggregated, rows) == []  # one update per round, the aggregate: no other to attack


def test_the_weaker_levels_run_only_the_attacks_that_rebuilt_graphs_at_the_strongest_in_those_rounds():
    from fedgraph_sim.runtime.audit_plan import not_attacked

    sweep = plan_audit(validate_config(USER))
    rows = [row("grain@ext", 1.0, 1), row("grain", 0.0, 1), row("dlg", 0.0, 3), row("glg", 1.0, 1, level="aux"),
            row("aux_sample", 1.0, 5)]  # a prior never counts; another level's row neither
    cells = plan_levels(sweep, rows)
    assert [c.columns["threat_level"] for c in cells] == ["update", "aux"]
    for cell in cells:
        assert cell.config.attack.names == ["grain@ext"] and cell.config.attack.rounds == [1]
        assert cell.config.threat.aux_graphs == LEVELS[cell.attack]["aux_graphs"]
    reasons = not_attacked(sweep, rows)
    assert set(reasons) == {"update", "aux", "malicious"} and set(reasons["aux"]) == {"3", "5"}
    assert "no attack rebuilt a graph exactly in this round's first 2 update(s)" in reasons["aux"]["3"]
    assert plan_levels(sweep, [row("grain", 0.0, 1)]) == []  # nothing rebuilt: nothing repeated with less


def test_the_plan_is_the_same_for_the_same_config_so_an_audit_resumes():
    first, second = (plan_audit(validate_config(USER), AuditBudget(seconds=5)) for _ in range(2))
    assert first.spec == second.spec and [c.id for c in first.cells] == [c.id for c in second.cells]
    assert "attack" not in first.spec["audit"]  # the user's attack section is the audit's own


@pytest.mark.parametrize("budget, message", [
    (AuditBudget(seconds=0), "--seconds: must be > 0"),
    (AuditBudget(clients=0), "--clients: must be >= 1"),
    (AuditBudget(graphs=0), "--graphs: must be >= 1"),
    (AuditBudget(seeds=0), "--seeds: must be >= 1"),
    (AuditBudget(minutes=0), "--minutes: must be > 0"),
])
def test_a_bad_budget_is_refused_by_its_option(budget, message):
    with pytest.raises(ConfigError, match=message):
        plan_audit(validate_config(USER), budget)


def test_a_config_the_audit_cannot_serve_is_refused_by_key():
    with pytest.raises(ConfigError, match="threat.per_node_gradients"):
        plan_audit(validate_config({**USER, "threat": {"per_node_gradients": True}}))


def test_the_attacks_and_the_what_if_changes_can_be_narrowed_and_unknown_names_are_refused():
    sweep = plan_audit(validate_config(USER), attacks=["grain@ext", "glg"], what_if=["dp_sgd_nm1"])
    assert all(c.config.attack.names == ["grain@ext", "glg"] for c in sweep.cells)  # the exact attacks first
    assert sweep.spec["what_if"] == ["dp_sgd_nm1"] and sweep.spec["attacks"] == ["grain@ext", "glg"]
    narrowed = plan_what_if(validate_config(USER), ["grain@ext"], changes=sweep.spec["what_if"])
    assert {f.setting for f in narrowed.federations} == {"as configured", "dp_sgd_nm1"}
    with pytest.raises(ConfigError, match="--attacks: 'grain@noise' is not an attack the audit runs; valid: grain, "
                                          "grain@ext, dlg"):
        plan_audit(validate_config(USER), attacks=["grain@noise"])
    with pytest.raises(ConfigError, match="--what-if: unknown change 'dp'; valid: dp_sgd_nm0.1, dp_sgd_nm1"):
        plan_audit(validate_config(USER), what_if=["dp"])


def test_the_description_of_an_audit_names_its_federation_rounds_budget_levels_and_what_was_not_attacked():
    from fedgraph_sim.runtime.audit_plan import LEVEL_TEXT, describe

    config = validate_config(USER)
    sweep = plan_audit(config, AuditBudget(seconds=7))
    what_if = plan_what_if(validate_config({**USER, "threat": {"secure_aggregation": True}}), ["grain"])
    plan = describe(sweep, [row("grain", 1.0, 3)], what_if)
    assert plan["config"]["name"] == "mine" and plan["config"]["clients"] == 2 and plan["rounds"] == [1, 3, 5]
    assert plan["budget"]["seconds"] == 7 and plan["levels"] == [*LEVELS, "malicious"]
    assert plan["level_text"] == LEVEL_TEXT
    assert plan["skipped"] == {"secure_aggregation": "the federation already has it"}
    assert set(plan["not_attacked"]["update"]) == {"1", "5"}
    assert plan["majority_rate"] is None  # no test split, no floor
    tested = validate_config({**USER, "data": {**USER["data"], "test_fraction": 0.25}})
    rate = describe(plan_audit(tested), [])["majority_rate"]
    assert 0.5 <= rate <= 1  # the floor beside the model's accuracy
    assert describe(sweep, [])["skipped"] == {}


def test_the_malicious_level_is_a_federation_of_its_own_attacked_by_the_attacks_that_read_crafted_updates():
    from fedgraph_sim.runtime.audit_plan import CAUGHT_BY, not_attacked, plan_malicious

    sweep = plan_audit(validate_config(USER))
    cell, = plan_malicious(sweep)
    honest, crafted = sweep.federations
    assert crafted.config.threat.server == "malicious" and honest.config.threat.server == "honest"
    assert crafted.setting == "" and crafted.config.attack.rounds == [1, 3, 5]  # its rows are the audit's own
    assert crafted.config.defenses == [CAUGHT_BY]  # the clients report whether they would catch it
    assert cell.columns == {"threat_level": "malicious"} and cell.config.threat.node_count
    assert cell.config.attack.names == ["grain", "grain@ext"]  # the attacks that read crafted updates
    assert plan_malicious(sweep) == []  # planned once
    assert not_attacked(sweep, [])["malicious"] == {}


@pytest.mark.parametrize("change, reason", [
    ({"threat": {"secure_aggregation": "secaggplus"}}, "Flower's SecAgg+ workflow sends one model to all"),
    ({"model": {"conv": "gat", "heads": 2}}, "the crafting separated_clients needs GCN layers"),
])
def test_the_malicious_level_says_why_it_was_not_attacked(change, reason):
    from fedgraph_sim.runtime.audit_plan import not_attacked, plan_malicious

    sweep = plan_audit(validate_config({**USER, **change}))
    assert plan_malicious(sweep) == [] and len(sweep.federations) == 1
    assert all(reason in why for why in not_attacked(sweep, [])["malicious"].values())
    off = plan_audit(validate_config(USER), malicious=False)
    assert plan_malicious(off) == [] and not_attacked(off, [])["malicious"]["1"] == "not attacked: --no-malicious"
