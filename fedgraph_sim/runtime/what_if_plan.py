"""The what-if stage of ``fedgraph-sim audit``: what would stop the leak, and at what cost.

The user's federation, as configured and under each change of ``audit_plan.WHAT_IF``, is trained
to the end over ``budget.seeds`` seeds (its accuracy and its cost get intervals), then attacked at
the strongest threat level by the attacks that rebuilt graphs exactly in the first stage, on every
client's update, one *unit* (one seed's round) at a time, until each claim is decided:

- a leak (k >= 1 graphs rebuilt exactly) is decided at once;
- no leak found is decided on n >= 59 graphs whose call completed (the rate's one-sided 95% bound
  at most 5%), and is a *stop* only against the leak of the federation as configured on the same
  units, by a one-sided Fisher exact test (``report.stop_rule.stop_claim``);
- every undecided setting is attacked on its next units in each pass (its first unit alone: it
  may return nothing), the most accurate first where the federation as configured's units are
  rationed (at most as many new ones per pass as jobs run at once: they are the costly cells, and
  that many keep every worker busy); one no more accurate than a setting already shown to stop is
  not attacked further: it cannot be the cheapest stop; one whose first unit returned no
  reconstruction (no attack applies, every call failed or timed out: not measured at this
  budget), or whose federation diverged, is done;
- what the audit's wall budget does not reach stays undecided at its n, and the page says so.

The federation as configured leads: a setting is attacked on a unit only together with or after
the federation as configured, so every claim compares like with like. Which units run next follows
from the rows alone (:func:`next_cells`), so an interrupted audit resumes to the same decisions.
"""

from __future__ import annotations

import math
from dataclasses import asdict
from pathlib import Path

from fedgraph_sim.config import RunConfig
from fedgraph_sim.errors import ConfigError
from fedgraph_sim.runtime.audit_plan import (STRONGEST, WHAT_IF, AuditBudget, _user_tree, _with, candidates,
                                             cell_of, federation_of)
from fedgraph_sim.runtime.sweeps.spec import Cell, Sweep, _slug

DECIDING_GRAPHS = 59  # no leak found on this many graphs bounds the rate below 5% (none_seen_bound)
SLACK = 2  # units captured per unit needed: calls that fail or time out are no evidence
MAX_ROUNDS = 8  # rounds captured per federation at most (each holds every client's update)


def capture_rounds(config: RunConfig, leak_rounds: list[int], budget: AuditBudget) -> list[int]:
    """The rounds each what-if federation keeps for the attacks, in training order: the rounds the
    first stage found leaks in, and the rounds after the first of them, until ``SLACK`` times the
    units that hold ``DECIDING_GRAPHS`` graphs (every client's update, up to ``budget.graphs``
    graphs each)."""
    per_unit = config.federation.sampled_per_round() * min(budget.graphs, config.train.batch_size)
    needed = math.ceil(SLACK * math.ceil(DECIDING_GRAPHS / per_unit) / budget.seeds)
    rounds = list(dict.fromkeys(sorted(leak_rounds)))
    following = (r for r in range(rounds[0] + 1, config.federation.rounds + 1) if r not in rounds)
    while len(rounds) < min(needed, MAX_ROUNDS):
        nxt = next(following, None)
        if nxt is None:
            break
        rounds.append(nxt)
    return sorted(rounds)  # taken in training order: a leak found early decides at once


def plan_what_if(config: RunConfig, attacks: list[str], budget: AuditBudget = AuditBudget(),
                 changes: list[str] | None = None, leak_rounds: list[int] = (1,)) -> Sweep:
    """The what-if federations: ``config`` as configured and under each of ``changes`` (default
    every ``WHAT_IF`` change), over ``budget.seeds`` seeds from the config's, capturing
    :func:`capture_rounds`; no cells (:func:`next_cells` adds them). ``attacks``: those that
    rebuilt graphs exactly in the first stage. A change the federation already has, or cannot
    have, is skipped with its reason (``spec["skipped"]``)."""
    from fedgraph_sim.report.audit_facts import AS_CONFIGURED

    user = _user_tree(config)
    rounds = capture_rounds(config, list(leak_rounds), budget)
    seeds = [config.seed + i for i in range(budget.seeds)]
    sweep = Sweep(name=_slug(f"what_if-{config.name}"), folder=Path("."),
                  spec={"what_if": user, "attacks": sorted(attacks), "budget": asdict(budget), "changes": changes,
                        "rounds": rounds, "seeds": seeds})
    skipped = sweep.spec["skipped"] = {}
    scenarios: dict[int, object] = {}
    settings = {AS_CONFIGURED: {}, **{k: v for k, v in WHAT_IF.items() if changes is None or k in changes}}
    for label, overrides in settings.items():
        if overrides and _with(user, overrides) == user:
            skipped[label] = "the federation already has it"
            continue
        try:
            for seed in seeds:
                federation, scenarios[seed] = federation_of(user, label, overrides, rounds, budget,
                                                            scenarios.get(seed), seed)
                sweep.federations.append(federation)
        except ConfigError as exc:  # this federation cannot have it: said on the page, not fatal
            skipped[label] = str(exc)
            sweep.federations = [f for f in sweep.federations if f.setting != label]
    return sweep


def units(sweep: Sweep) -> list[tuple[int, int]]:
    """Every (round, seed) a setting can be attacked on, in the order they are taken."""
    return [(rnd, seed) for rnd in sweep.spec["rounds"] for seed in sweep.spec["seeds"]]


def next_cells(sweep: Sweep, rows: list[dict], accuracy: dict[str, float | None], slots: int = 2) -> list[Cell]:
    """The cells to run next, from the rows so far and the final accuracy of each trained
    federation (``accuracy``: federation id -> accuracy; an untrained one is absent): the next
    units of each undecided setting (its first alone, then up to ``slots`` past those of the
    federation as configured), and the federation as configured on them, at most ``slots`` new
    units of it (``slots``: the jobs that run at once; its cells are the costly ones, so a pass
    keeps every worker busy), the cells whose units took longest so far first (a setting not
    attacked yet counts as the longest). Empty when every claim is decided or out of units. See
    the module's docstring for the rules."""
    from fedgraph_sim.report.audit_facts import AS_CONFIGURED
    from fedgraph_sim.report.stop_rule import LEAKS, NOT_MEASURED, cell, stop_claim, unit_rows

    budget = AuditBudget(**sweep.spec["budget"])
    names = {k: v for k, v in candidates().items() if k in sweep.spec["attacks"]}
    trained = {(f.setting, f.config.seed): f for f in sweep.federations if f.id in accuracy}
    attacked = {(r["setting"], r["seed"], r["round"]) for r in rows}
    by_setting: dict[str, list[dict]] = {}
    for r in rows:
        by_setting.setdefault(r["setting"], []).append(r)

    def open_units(label: str) -> list[tuple[int, int]]:
        return [(rnd, seed) for rnd, seed in units(sweep)
                if (label, seed) in trained and (label, seed, rnd) not in attacked]

    def unit_cell(label: str, unit: tuple[int, int]) -> Cell:
        rnd, seed = unit
        return cell_of(trained[(label, seed)], names, [rnd], STRONGEST, budget, None, every_client=True)

    def mean_accuracy(label: str) -> float:
        values = [accuracy[f.id] for f in sweep.federations
                  if f.setting == label and f.id in accuracy and accuracy[f.id] is not None]
        values = [v for v in values if math.isfinite(v)]
        return sum(values) / len(values) if values else -math.inf

    def unit_seconds(label: str) -> float:  # the attack seconds a unit of it took so far; unknown: the most
        mine = by_setting.get(label, [])
        spent = sum(float(r.get("seconds") or 0.0) for r in mine)
        return spent / len({(r["round"], r["seed"]) for r in mine}) if mine else math.inf

    own_rows = by_setting.get(AS_CONFIGURED, [])
    own_open = open_units(AS_CONFIGURED)
    own = cell(own_rows) if own_rows else None
    if own is not None and own["outcome"] != LEAKS:
        # nothing to stop yet: the federation as configured is attacked further, alone, until it
        # leaks or its no leak is decided
        undecided = own["outcome"] != "no leak found" or not own["decided"]
        return [unit_cell(AS_CONFIGURED, unit) for unit in own_open[:slots]] if undecided else []
    own_done = {(r["round"], r["seed"]) for r in own_rows}
    own_new = own_open[:slots] if own is None else []  # the federation as configured leads
    others = sorted({f.setting for f in sweep.federations} - {AS_CONFIGURED}, key=mean_accuracy, reverse=True)
    wanted, stop_accuracy = [], -math.inf
    for label in others:
        mine = by_setting.get(label, [])
        if mine:
            found = cell(mine)
            claim, _ = stop_claim(cell(unit_rows(own_rows, mine)), found)
            if claim == "stops":
                stop_accuracy = max(stop_accuracy, mean_accuracy(label))
            if claim in (LEAKS, "stops", NOT_MEASURED):
                continue  # decided, or nothing returned at this budget: its units go to the others
        if mean_accuracy(label) == -math.inf or mean_accuracy(label) <= stop_accuracy:
            continue  # diverged, or it cannot be the cheapest stop
        # its next units, one until its first has returned something (it may be not measured):
        # those the federation as configured has been attacked on, and up to ``slots`` new ones of
        # it per pass (they are the costly cells, and ``slots`` of them keep every worker busy)
        for unit in open_units(label)[:None if mine else 1]:
            if unit not in own_done and unit not in own_new:
                if len(own_new) == slots:
                    break
                own_new.append(unit)
            wanted.append((label, unit))

    # the longest first (the runner submits in this order), so a pass ends with its short cells;
    # among the unknown, a setting's first unit before the federation as configured's, whose
    # several units then share the workers while that one runs
    chosen = [(AS_CONFIGURED, unit) for unit in own_new] + wanted
    cost = {label: unit_seconds(label) for label in {label for label, _ in chosen}}
    order = sorted(chosen, key=lambda c: (-cost[c[0]], c[0] == AS_CONFIGURED))
    return [unit_cell(label, unit) for label, unit in order]
