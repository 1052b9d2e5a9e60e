"""The what-if stage: the federation as configured and each change over seeds, capturing enough
rounds to decide; then attacked unit by unit (a seed's round), the federation as configured
leading, until each claim is decided, a setting that cannot be the cheapest stop left alone."""

from fedgraph_sim.config import validate_config
from fedgraph_sim.runtime.audit_plan import WHAT_IF, AuditBudget, plan_audit
from fedgraph_sim.runtime.what_if_plan import capture_rounds, next_cells, plan_what_if, units

USER = {"name": "mine", "data": {"dataset": "synthetic", "options": {"num_graphs": 40}},
        "federation": {"num_clients": 2, "rounds": 5}}


def test_enough_rounds_are_captured_to_decide_from_the_leaking_ones_on():
    config = validate_config(USER)  # 2 clients, 1 graph per update: 2 graphs per unit
    assert capture_rounds(config, [3], AuditBudget(seeds=3)) == [3, 4, 5]  # 59 graphs x 2 need more: all after
    wide = validate_config({**USER, "federation": {"num_clients": 30, "rounds": 50}})
    assert capture_rounds(wide, [1, 25], AuditBudget(seeds=3)) == [1, 25]  # 30 per unit: 4 units, 2 rounds
    assert capture_rounds(wide, [1], AuditBudget(seeds=1)) == [1, 2, 3, 4]
    ten = validate_config({**USER, "federation": {"num_clients": 10, "rounds": 50}})  # 10 per unit: 4 rounds
    assert capture_rounds(ten, [25, 1, 50], AuditBudget(seeds=3)) == [1, 2, 25, 50]  # in training order


def test_each_setting_and_the_federation_as_configured_train_over_seeds_without_cells():
    config = validate_config(USER)
    own = plan_audit(config).federations[0]
    sweep = plan_what_if(config, ["grain@ext"], AuditBudget(seeds=2), leak_rounds=[1])
    assert [f.setting for f in sweep.federations][::2] == ["as configured", *WHAT_IF]
    assert {f.config.seed for f in sweep.federations} == {0, 1} and sweep.cells == []
    assert sweep.spec["rounds"] == [1, 2, 3, 4, 5] and sweep.spec["seeds"] == [0, 1]
    by_label = {f.setting: f.config for f in sweep.federations if f.config.seed == 0}
    assert by_label["as configured"].federation == own.config.federation
    assert by_label["batch_x4"].train.batch_size == 4 * own.config.train.batch_size
    assert by_label["secure_aggregation"].threat.secure_aggregation is True
    assert by_label["prune_0.9"].defenses == [{"name": "prune", "p": 0.9}]
    assert all(f.config.attack.rounds == [1, 2, 3, 4, 5] for f in sweep.federations)  # captured, not attacked


def test_a_change_the_federation_already_has_or_cannot_have_is_skipped_with_its_reason(monkeypatch):
    from fedgraph_sim.runtime import what_if_plan

    sweep = plan_what_if(validate_config({**USER, "threat": {"secure_aggregation": True}}), ["grain"])
    assert "secure_aggregation" not in [f.setting for f in sweep.federations]
    assert sweep.spec["skipped"]["secure_aggregation"] == "the federation already has it"
    monkeypatch.setattr(what_if_plan, "WHAT_IF", {"prune_2": {"defenses": [{"name": "prune", "p": 2.0}]}})
    sweep = plan_what_if(validate_config(USER), ["grain"])
    assert [f.setting for f in sweep.federations] == ["as configured"] * 3
    assert sweep.spec["skipped"]["prune_2"].startswith("defenses.0.p")


def _sweep():
    return plan_what_if(validate_config(USER), ["grain"], AuditBudget(seeds=2), ["prune_0.9", "batch_x4"], [1])


def _rows(setting, seed, round, exact, n=2):
    seconds = 10.0 if setting == "as configured" else 0.1  # as measured: its calls are the long ones
    return [{"setting": setting, "seed": seed, "round": round, "attack": "grain", "status": "ok", "seconds": seconds,
             "gsm_full_iso": exact, "threat_level": "hints", "graph_id": 0}] * n


def _units(cells):
    return [(c.federation.setting, c.federation.config.seed, c.config.attack.rounds[0]) for c in cells]


def test_the_first_pass_attacks_each_settings_first_unit_and_fills_the_workers_with_the_federation_as_configured():
    sweep = _sweep()  # units in order: (round 1, seed 0), (1, 1), (2, 0), ...
    accuracy = {f.id: {"as configured": 0.8, "prune_0.9": 0.7, "batch_x4": 0.75}[f.setting] for f in sweep.federations}
    cells = next_cells(sweep, [], accuracy, slots=3)
    assert _units(cells) == [("batch_x4", 0, 1), ("prune_0.9", 0, 1),  # a setting's first unit alone: it may be empty
                             ("as configured", 0, 1), ("as configured", 1, 1), ("as configured", 0, 2)]
    assert _units(next_cells(sweep, [], accuracy, slots=2))[2:] == [("as configured", 0, 1), ("as configured", 1, 1)]
    assert all(c.config.attack.clients_per_round is None and c.config.attack.names == ["grain"] for c in cells)
    assert all(c.columns == {"threat_level": "hints"} for c in cells)
    assert next_cells(sweep, [], {}) == []  # nothing trained: nothing to attack


def test_the_federation_as_configured_is_rationed_to_one_new_unit_per_worker_and_every_setting_follows_it():
    sweep = _sweep()
    accuracy = {f.id: {"as configured": 0.8, "prune_0.9": 0.78, "batch_x4": 0.75}[f.setting] for f in sweep.federations}
    done = [(0, 1), (1, 1), (0, 2)]  # (seed, round)
    rows = ([r for seed, rnd in done for r in _rows("as configured", seed, rnd, 1.0)]
            + [r for seed, rnd in done for r in _rows("prune_0.9", seed, rnd, 0.0)]
            + [{**r, "seconds": 5.0} for r in _rows("batch_x4", 0, 1, 0.0)])
    # prune (most accurate) takes the two units after the federation as configured's, which are attacked
    # with it; batch_x4 the units the federation as configured has been attacked on, and those two;
    # the longest first: the federation as configured (20 s a unit), batch_x4 (10 s), prune (0.2 s)
    assert _units(next_cells(sweep, rows, accuracy, slots=2)) == [
        ("as configured", 1, 2), ("as configured", 0, 3),
        ("batch_x4", 1, 1), ("batch_x4", 0, 2), ("batch_x4", 1, 2), ("batch_x4", 0, 3),
        ("prune_0.9", 1, 2), ("prune_0.9", 0, 3)]
    assert _units(next_cells(sweep, rows, accuracy, slots=1)) == [
        ("as configured", 1, 2), ("batch_x4", 1, 1), ("batch_x4", 0, 2), ("batch_x4", 1, 2), ("prune_0.9", 1, 2)]


def test_a_leak_is_decided_at_once_and_a_setting_less_accurate_than_a_stop_is_left_alone():
    sweep = _sweep()
    accuracy = {f.id: {"as configured": 0.8, "prune_0.9": 0.7, "batch_x4": 0.75}[f.setting] for f in sweep.federations}
    rows = _rows("as configured", 0, 1, 1.0) + _rows("batch_x4", 0, 1, 1.0) + _rows("prune_0.9", 0, 1, 0.0)
    assert _units(next_cells(sweep, rows, accuracy)) == [("as configured", 1, 1), ("as configured", 0, 2),
                                                         ("prune_0.9", 1, 1), ("prune_0.9", 0, 2)]
    # every unit attacked, prune found nothing on 60 graphs against the leak: it stops; nothing is left
    done = [u for s in ("as configured", "prune_0.9") for r, seed in units(sweep) for u in _rows(s, seed, r, 0.0, 6)]
    done = _rows("as configured", 0, 1, 1.0, 6) + done[6:] + _rows("batch_x4", 0, 1, 1.0)
    assert next_cells(sweep, done, accuracy) == []
    # batch_x4 undecided (no leak yet, 2 graphs) but less accurate than prune, which stops: left alone
    stop = done[:-2] + _rows("batch_x4", 0, 1, 0.0)
    accuracy = {f.id: {"as configured": 0.8, "prune_0.9": 0.78, "batch_x4": 0.75}[f.setting] for f in sweep.federations}
    assert next_cells(sweep, stop, accuracy) == []


def test_the_federation_as_configured_is_attacked_alone_until_it_leaks():
    sweep = _sweep()
    accuracy = {f.id: 0.8 for f in sweep.federations}
    rows = _rows("as configured", 0, 1, 0.0) + _rows("prune_0.9", 0, 1, 0.0)
    assert _units(next_cells(sweep, rows, accuracy)) == [("as configured", 1, 1), ("as configured", 0, 2)]
    everything = [u for r, seed in units(sweep) for u in _rows("as configured", seed, r, 0.0, 6)]
    assert next_cells(sweep, everything, accuracy) == []  # 60 graphs, no leak: nothing to stop


def test_a_setting_whose_first_unit_returned_nothing_or_whose_federation_diverged_is_done():
    sweep = _sweep()
    accuracy = {f.id: float("nan") if f.setting == "batch_x4" else 0.8 for f in sweep.federations}
    own = _rows("as configured", 0, 1, 1.0)
    for status in ("not_applicable", "timeout", "failed"):  # no attack applies; every call timed out or failed
        rows = own + [{**r, "status": status, "gsm_full_iso": None} for r in _rows("prune_0.9", 0, 1, 0.0)]
        assert next_cells(sweep, rows, accuracy) == []


def test_the_cells_whose_units_took_longest_come_first_and_a_setting_not_attacked_yet_counts_as_longest():
    sweep = _sweep()
    accuracy = {f.id: 0.8 for f in sweep.federations}
    rows = ([{**r, "seconds": 20.0} for r in _rows("as configured", 0, 1, 1.0)]
            + [{**r, "seconds": 0.1} for r in _rows("prune_0.9", 0, 1, 0.0)])
    assert _units(next_cells(sweep, rows, accuracy)) == [
        ("batch_x4", 0, 1), ("as configured", 1, 1), ("as configured", 0, 2), ("prune_0.9", 1, 1), ("prune_0.9", 0, 2)]
