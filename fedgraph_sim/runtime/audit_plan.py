"""The plan of ``fedgraph-sim audit``: a user's federation config, unchanged, turned into a sweep
of the bench's own jobs (``runtime.sweeps``), so that an audit runs, shows progress and resumes
exactly as a sweep does.

What it attacks:

- **Every registered attack** but the gradient-free priors, in paper mode, plus the named
  options beyond a paper that widen where an attack applies (an attack's ``audit_options``,
  e.g. GRAIN on FedAvg updates, batches and noisy updates; their rows are named ``<attack>@ext``).
  An attack that does not apply says why in its rows (``not_applicable``, the attack's own reason,
  which names the change that would make it apply); the priors are scored beside every row.
- **Three threat levels**, what the curious server holds besides the update (``LEVELS``): the
  update alone; the update and auxiliary graphs of the same distribution (``aux``); and those
  with per-graph hints, the node count and the label. The priors are always scored with the
  auxiliary graphs and the node count: a prior gets every advantage any attack gets.
- **Three rounds of the user's own training**: the first, the middle and the last.
- **What if** (``WHAT_IF``), a second stage planned from the first: the same federation under a
  small ladder of defenses and training changes, trained to the end for its accuracy and attacked
  at the strongest threat level by the attacks that rebuilt graphs exactly, in the rounds they did.

Budgets are bounded (:class:`AuditBudget`): seconds per attack call, clients attacked per round,
graphs scored per update.
"""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass
from pathlib import Path

from fedgraph_sim import registry
from fedgraph_sim.config import DefenseSetting, RunConfig
from fedgraph_sim.errors import ConfigError, require
from fedgraph_sim.metrics import PRIORS
from fedgraph_sim.runtime.sweeps.spec import Cell, Federation, Sweep, _short_hash, _slug

#: Threat level -> the ``threat`` keys its cells set (everything else is the user's).
LEVELS = {
    "update": {"aux_graphs": False, "node_count": False, "label": False},
    "aux": {"aux_graphs": True, "node_count": False, "label": False},
    "hints": {"aux_graphs": True, "node_count": True, "label": True},
}
LEVEL_TEXT = {"update": "the update alone", "aux": "the update and auxiliary graphs",
              "hints": "the update, auxiliary graphs and each graph's node count and label"}

#: The what-if ladder: label -> run-config overrides of the user's federation. ``defenses`` entries
#: are added after the user's own; ``train.batch_size`` multiplies the user's.
WHAT_IF = {
    "dp_sgd_nm0.1": {"defenses": [{"name": "dp_sgd", "clip": 1.0, "noise_multiplier": 0.1}]},
    "dp_sgd_nm1": {"defenses": [{"name": "dp_sgd", "clip": 1.0, "noise_multiplier": 1.0}]},
    "prune_0.9": {"defenses": [{"name": "prune", "p": 0.9}]},
    "batch_x4": {"train.batch_size": 4},
    "secure_aggregation": {"threat.secure_aggregation": True},
}

@dataclass(frozen=True)
class AuditBudget:
    """How much an audit spends: ``seconds`` per attack call, ``clients`` attacked per round (a
    seeded draw), ``graphs`` scored per update, ``workers`` attack processes per job."""

    seconds: float = 20.0
    clients: int = 2
    graphs: int = 4
    workers: int = 1

    def check(self) -> None:
        require(self.seconds > 0, "--seconds", f"must be > 0 (got {self.seconds})")
        require(self.clients >= 1, "--clients", f"must be >= 1 (got {self.clients})")
        require(self.graphs >= 1, "--graphs", f"must be >= 1 (got {self.graphs})")


def audited_rounds(rounds: int) -> list[int]:
    """The first, the middle and the last round (fewer when they coincide)."""
    return sorted({1, (rounds + 1) // 2, rounds})


def candidates(only: list[str] | None = None) -> dict[str, dict]:
    """Row name -> attack parameters: every registered attack but the priors, in paper mode, and
    ``<name>@ext`` with its ``audit_options`` where it declares some; ``only`` keeps those rows
    (``--attacks``), refusing a name that is not one."""
    from attacks.base import build_attack

    out: dict[str, dict] = {}
    for name in registry.attacks.names():
        if name in PRIORS:
            continue
        out[name] = {}
        options = getattr(build_attack(name), "audit_options", None)
        if options:
            out[f"{name}@ext"] = dict(options)
    for name in only or ():
        require(name in out, "--attacks", f"'{name}' is not an attack the audit runs; valid: {', '.join(out)}")
    return {name: params for name, params in out.items() if only is None or name in only}


def _attack_section(tree: dict, names: dict[str, dict], rounds: list[int], budget: AuditBudget) -> dict:
    attack = tree.get("attack", {})
    return {**attack, "names": list(names), "params": {k: v for k, v in names.items() if v},
            "rounds": rounds, "clients": "all", "clients_per_round": budget.clients,
            "max_graphs": budget.graphs, "limit": {}, "time_budget": budget.seconds, "time_budgets": {},
            "workers": budget.workers}


def _with(tree: dict, overrides: dict) -> dict:
    """``tree`` with a what-if's overrides (defenses appended, the batch size multiplied)."""
    tree = copy.deepcopy(tree)
    for key, value in overrides.items():
        if key == "defenses":
            tree["defenses"] = list(tree.get("defenses") or []) + copy.deepcopy(value)
        elif key == "train.batch_size":
            tree.setdefault("train", {})["batch_size"] = RunConfig.model_validate(tree).train.batch_size * value
        else:
            section, _, leaf = key.partition(".")
            tree.setdefault(section, {})[leaf] = value
    return tree


def _federation(user: dict, label: str, overrides: dict, rounds: list[int], budget: AuditBudget, scenario):
    """The federation of ``user`` with a what-if's ``overrides``, capturing ``rounds``: validated."""
    from fedgraph_sim.runtime.session import Session, resolve

    tree = _with(user, overrides)
    tree["attack"] = _attack_section(tree, {}, rounds, budget)  # captures, attacks nothing
    config, scenario = resolve(tree, scenario=scenario)
    Session(config, scenario=scenario)
    fed_id = _slug(label or "federation") + "-" + _short_hash(config.model_dump(mode="json"))
    return Federation(fed_id, config, DefenseSetting.of(config.defenses), label), scenario


def _cell(federation: Federation, names: dict[str, dict], rounds: list[int], level: str, budget: AuditBudget,
          scenario) -> Cell:
    from fedgraph_sim.runtime.session import Session, resolve

    tree = federation.config.model_dump(mode="json")
    tree["attack"] = _attack_section(tree, names, rounds, budget)
    tree["threat"].update(LEVELS[level])
    config, _ = resolve(tree, scenario=scenario)
    Session(config, scenario=scenario)
    cell_id = f"{federation.id}__{level}-{_short_hash(config.model_dump(mode='json'))}"
    return Cell(cell_id, federation, level, config, columns={"threat_level": level})


def _user_tree(config: RunConfig) -> dict:
    user = config.model_dump(mode="json")
    user.pop("attack", None)  # the audit's own
    return user


def plan_audit(config: RunConfig, budget: AuditBudget = AuditBudget(), what_if: list[str] | None = None,
               attacks: list[str] | None = None) -> Sweep:
    """The audit of ``config``: its federation, attacked at every threat level in the first, middle
    and last round by every candidate attack (``attacks``: only those). ``what_if`` (default every
    ``WHAT_IF`` change, ``[]`` none) is recorded for the second stage (:func:`plan_what_if`). Every
    job is validated here; ConfigError names the key."""
    budget.check()
    what_if = list(WHAT_IF) if what_if is None else list(what_if)
    for name in what_if:
        require(name in WHAT_IF, "--what-if", f"unknown change '{name}'; valid: {', '.join(WHAT_IF)}")
    names = candidates(attacks)
    if config.model.task != "graph":
        raise ConfigError(f"model.task: the audit attacks graph classifiers (got {config.model.task}); "
                          "node-classification attacks run with fedgraph-sim run")
    if config.threat.per_node_gradients:
        raise ConfigError("threat.per_node_gradients: a leaky client is a threat model of its own; "
                          "the audit asks what a well-behaved client's update gives away")
    user = _user_tree(config)
    sweep = Sweep(name=_slug(f"audit-{config.name}"), folder=Path("."),
                  spec={"audit": user, "budget": asdict(budget), "what_if": what_if, "attacks": attacks})
    rounds = audited_rounds(config.federation.rounds)
    federation, scenario = _federation(user, "", {}, rounds, budget, None)
    sweep.federations.append(federation)
    # the strongest level first: it has the most attacks that apply, so the longest cell starts
    # at once and the others share the second job slot
    sweep.cells += [_cell(federation, names, rounds, level, budget, scenario) for level in reversed(LEVELS)]
    return sweep


def plan_what_if(config: RunConfig, attacks: list[str], budget: AuditBudget = AuditBudget(),
                 changes: list[str] | None = None, rounds: list[int] = (1,)) -> Sweep:
    """The what-if stage: ``config`` under each of ``changes`` (default every ``WHAT_IF`` change),
    trained to the end and attacked in ``rounds`` at the ``hints`` level by ``attacks`` (the ones
    that rebuilt graphs exactly in the user's own federation, in the rounds they did). A change
    the federation already has, or cannot have, is skipped with its reason (``spec["skipped"]``)."""
    user = _user_tree(config)
    names = {name: params for name, params in candidates().items() if name in attacks}
    sweep = Sweep(name=_slug(f"what_if-{config.name}"), folder=Path("."),
                  spec={"what_if": user, "attacks": sorted(names), "budget": asdict(budget), "changes": changes,
                        "rounds": list(rounds)})
    skipped = sweep.spec["skipped"] = {}
    scenario = None
    for label, overrides in WHAT_IF.items():
        if changes is not None and label not in changes:
            continue
        if _with(user, overrides) == user:
            skipped[label] = "the federation already has it"
            continue
        try:
            federation, scenario = _federation(user, label, overrides, list(rounds), budget, scenario)
        except ConfigError as exc:  # this federation cannot have it: said on the page, not fatal
            skipped[label] = str(exc)
            continue
        sweep.federations.append(federation)
        sweep.cells.append(_cell(federation, names, list(rounds), "hints", budget, scenario))
    return sweep


def describe(sweep: Sweep, what_if: Sweep | None = None) -> dict:
    """What the audit's facts say about how it was run (``report.audit_facts``): the user's
    federation, the audited rounds, the budget, the threat levels, the what-if changes not tried."""
    config = sweep.federations[0].config
    return {"config": {"name": config.name, "dataset": config.data.dataset,
                       "clients": config.federation.num_clients, "rounds": config.federation.rounds,
                       "train": config.train.model_dump(mode="json"), "defenses": config.defenses},
            "rounds": audited_rounds(config.federation.rounds), "budget": sweep.spec["budget"],
            "levels": list(LEVELS), "level_text": LEVEL_TEXT,
            "skipped": what_if.spec.get("skipped", {}) if what_if is not None else {}}
