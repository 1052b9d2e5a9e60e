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
  auxiliary graphs and the node count: a prior gets every advantage any attack gets. A fourth,
  ``malicious``, is a server that crafts the weights it sends (:func:`plan_malicious`).
- **Three rounds of the user's own training**: the first, the middle and the last.
- **The budget where leaks are**: the strongest level runs first, every attack on each audited
  round's first updates, the attacks that can rebuild a graph exactly (``Attack.exact``) first
  among them. The weaker levels (:func:`plan_levels`) are attacked only by the attacks that
  rebuilt a graph exactly there, and only in the rounds they did: what finds nothing with more
  knowledge is not repeated with less. An attack that cannot apply to an update returns at once,
  with its reason, before any reconstruction starts.
- **What if** (``WHAT_IF``, :mod:`fedgraph_sim.runtime.what_if_plan`), planned from the first
  stage: the same federation under a small ladder of defenses and training changes, over seeds,
  attacked at the strongest threat level until each claim is decided.

Budgets are bounded (:class:`AuditBudget`): seconds per attack call, clients attacked per round,
graphs scored per update, seeds per what-if setting, and minutes for the whole audit.
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
STRONGEST = "hints"
#: The fourth level: a malicious server (``threat.server: malicious``) with the hints' knowledge,
#: attacked by the attacks that read its crafted updates (``Attack.reads_crafting``). A crafted
#: round trains nothing, so it runs on a federation of its own (:func:`plan_malicious`), whose
#: clients also run ``CAUGHT_BY``: the check that reports, without refusing, whether they would
#: have caught the crafting.
MALICIOUS = "malicious"
THREATS = {**LEVELS, MALICIOUS: {**LEVELS[STRONGEST], "server": "malicious"}}
CAUGHT_BY = {"name": "crafted_check", "action": "flag"}
LEVEL_TEXT = {"update": "the update alone", "aux": "the update and auxiliary graphs",
              "hints": "the update, auxiliary graphs and each graph's node count and label",
              MALICIOUS: "weights the server crafted (threat.crafting), with the hints' knowledge"}

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
    """How much an audit spends: ``seconds`` per attack call, ``clients`` attacked per round in the
    first stage (a seeded draw: a round's first updates), ``graphs`` scored per update,
    ``workers`` attack processes of the strongest level's cell, which runs alone (the later
    cells run side by side, one process each), ``seeds`` federations per what-if setting (its accuracy
    interval), ``minutes`` of wall time for the whole audit (what is not attacked by then is
    undecided, and says so)."""

    seconds: float = 20.0
    clients: int = 2
    graphs: int = 4
    workers: int = 2
    seeds: int = 3
    minutes: float = 30.0

    def check(self) -> None:
        require(self.seconds > 0, "--seconds", f"must be > 0 (got {self.seconds})")
        require(self.clients >= 1, "--clients", f"must be >= 1 (got {self.clients})")
        require(self.graphs >= 1, "--graphs", f"must be >= 1 (got {self.graphs})")
        require(self.seeds >= 1, "--seeds", f"must be >= 1 (got {self.seeds})")
        require(self.minutes > 0, "--minutes", f"must be > 0 (got {self.minutes})")


def audited_rounds(rounds: int) -> list[int]:
    """The first, the middle and the last round (fewer when they coincide)."""
    return sorted({1, (rounds + 1) // 2, rounds})


def candidates(only: list[str] | None = None) -> dict[str, dict]:
    """Row name -> attack parameters: every registered attack but the priors, in paper mode, and
    ``<name>@ext`` with its ``audit_options`` where it declares some, the attacks that can rebuild
    a graph exactly first; ``only`` keeps those rows (``--attacks``), refusing a name that is not
    one."""
    from attacks.base import build_attack

    out: dict[str, dict] = {}
    built = {name: build_attack(name) for name in registry.attacks.names() if name not in PRIORS}
    for name, attack in sorted(built.items(), key=lambda item: not item[1].exact):  # stable: registry order
        out[name] = {}
        if attack.audit_options:
            out[f"{name}@ext"] = dict(attack.audit_options)
    for name in only or ():
        require(name in out, "--attacks", f"'{name}' is not an attack the audit runs; valid: {', '.join(out)}")
    return {name: params for name, params in out.items() if only is None or name in only}


def _attack_section(tree: dict, names: dict[str, dict], rounds: list[int], budget: AuditBudget,
                    every_client: bool = False, workers: int = 1, clients: list[int] | None = None) -> dict:
    attack = tree.get("attack", {})
    return {**attack, "names": list(names), "params": {k: v for k, v in names.items() if v},
            "rounds": rounds, "clients": "all" if clients is None else clients,
            "clients_per_round": None if every_client else budget.clients, "max_graphs": budget.graphs,
            "limit": {}, "time_budget": budget.seconds, "time_budgets": {}, "workers": workers}


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


def federation_of(user: dict, label: str, overrides: dict, rounds: list[int], budget: AuditBudget, scenario,
                  seed: int | None = None):
    """The federation of ``user`` with a what-if's ``overrides`` (and ``seed``), capturing
    ``rounds``: validated. ``scenario``: one built for the same data and seed, or None."""
    from fedgraph_sim.runtime.session import Session, resolve

    tree = _with(user, overrides)
    if seed is not None:
        tree["seed"] = seed
    tree["attack"] = _attack_section(tree, {}, rounds, budget)  # captures, attacks nothing
    config, scenario = resolve(tree, scenario=scenario)
    Session(config, scenario=scenario)
    fed_id = _slug(label or "federation") + "-" + _short_hash(config.model_dump(mode="json"))
    return Federation(fed_id, config, DefenseSetting.of(config.defenses), label), scenario


def cell_of(federation: Federation, names: dict[str, dict], rounds: list[int], level: str, budget: AuditBudget,
            scenario, every_client: bool = False, workers: int = 1, clients: list[int] | None = None) -> Cell:
    """``federation`` attacked at ``level`` in ``rounds`` by ``names`` (row -> parameters), on the
    budget's first updates per round or, ``every_client``, on every update (of ``clients`` only,
    when given), in ``workers`` attack processes: validated."""
    from fedgraph_sim.runtime.session import Session, resolve

    tree = federation.config.model_dump(mode="json")
    tree["attack"] = _attack_section(tree, names, rounds, budget, every_client, workers, clients)
    tree["threat"].update(THREATS[level])
    config, _ = resolve(tree, scenario=scenario)
    Session(config, scenario=scenario)
    cell_id = f"{federation.id}__{level}-{_short_hash(config.model_dump(mode='json'))}"
    return Cell(cell_id, federation, level, config, columns={"threat_level": level})


def _user_tree(config: RunConfig) -> dict:
    user = config.model_dump(mode="json")
    user.pop("attack", None)  # the audit's own
    return user


def plan_audit(config: RunConfig, budget: AuditBudget = AuditBudget(), what_if: list[str] | None = None,
               attacks: list[str] | None = None, malicious: bool = True) -> Sweep:
    """The audit of ``config``: its federation, attacked at the strongest threat level in the first,
    middle and last round by every candidate attack (``attacks``: only those); the weaker levels
    follow from its rows (:func:`plan_levels`), the malicious level from the config
    (:func:`plan_malicious`, unless ``malicious`` is False). ``what_if`` (default every ``WHAT_IF``
    change, ``[]`` none) is recorded for the what-if stage. Every job is validated here; ConfigError
    names the key."""
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
                  spec={"audit": user, "budget": asdict(budget), "what_if": what_if, "attacks": attacks,
                        "malicious": malicious})
    rounds = audited_rounds(config.federation.rounds)
    federation, scenario = federation_of(user, "", {}, rounds, budget, None)
    sweep.federations.append(federation)
    sweep.cells.append(cell_of(federation, names, rounds, STRONGEST, budget, scenario, workers=budget.workers))
    return sweep


def plan_extension(sweep: Sweep, rows: list[dict]) -> list[Cell]:
    """More evidence where the strongest level's first updates decided nothing: for each audited
    round whose cell there is neither a leak nor a decided no leak (``rows``: the strongest level's
    first cell), every other client's update of that round, attacked by the attacks that can
    rebuild a graph exactly (``Attack.exact``). A round holds as many graphs as its updates do, so
    a cell may stay undecided at that n; the page says so."""
    from fedgraph_sim.report.stop_rule import LEAKS, cell, decided

    federation = sweep.federations[0]
    if federation.config.threat.secure_aggregation:  # a round's one update, the aggregate, is attacked already
        return []
    budget = AuditBudget(**sweep.spec["budget"])
    params = candidates(sweep.spec.get("attacks"))
    exact = {name: p for name, p in params.items() if registry.attacks.get(name.split("@")[0]).exact}
    out = []
    for rnd in audited_rounds(federation.config.federation.rounds):
        mine = [r for r in rows if r.get("threat_level") == STRONGEST and r["round"] == rnd]
        found = cell(mine)
        attacked = {r["client"] for r in mine if r.get("client") is not None}
        rest = [k for k in range(federation.config.federation.num_clients) if k not in attacked]
        if exact and rest and found["outcome"] != LEAKS and not decided(found):
            out.append(cell_of(federation, exact, [rnd], STRONGEST, budget, None, every_client=True,
                               workers=budget.workers, clients=rest))
    return out


def _exact_by_round(rows: list[dict]) -> dict[int, list[str]]:
    """Round -> the attacks that rebuilt a graph exactly in it at the strongest level."""
    from fedgraph_sim.report.audit_facts import EXACT

    out: dict[int, set[str]] = {}
    for row in rows:
        if row.get("threat_level") == STRONGEST and row.get(EXACT) == 1.0 and row["attack"] not in PRIORS:
            out.setdefault(row["round"], set()).add(row["attack"])
    return {rnd: sorted(names) for rnd, names in sorted(out.items())}


def plan_levels(sweep: Sweep, rows: list[dict]) -> list[Cell]:
    """The weaker levels' cells, from the strongest level's ``rows``: each attacked only by the
    attacks that rebuilt a graph exactly at the strongest level, in the rounds they did (none when
    nothing was rebuilt there; :func:`not_attacked` says why)."""
    leaks = _exact_by_round(rows)
    if not leaks:
        return []
    federation = sweep.federations[0]
    budget = AuditBudget(**sweep.spec["budget"])
    params = candidates(sweep.spec.get("attacks"))
    names = {name: params[name] for name in params if any(name in found for found in leaks.values())}
    return [cell_of(federation, names, list(leaks), level, budget, None) for level in LEVELS if level != STRONGEST]


def malicious_problem(sweep: Sweep) -> str | None:
    """Why the audit does not attack at the malicious level, or None."""
    from fedgraph_sim.crafting import crafting

    if sweep.spec.get("malicious") is False:
        return "not attacked: --no-malicious"
    config = sweep.federations[0].config
    if not _readers(sweep):
        return "not attacked: none of the audited attacks reads a malicious server's crafted updates"
    if config.threat.secure_aggregation == "secaggplus":
        return ("not attacked: the crafting sends each client its own weights, and Flower's SecAgg+ workflow sends "
                "one model to all")
    problem = crafting(config.threat.crafting).problem(config.model.model_dump(), config.federation.num_clients)
    return None if problem is None else f"not attacked: the crafting {config.threat.crafting} {problem}"


def _readers(sweep: Sweep) -> dict[str, dict]:
    return {name: params for name, params in candidates(sweep.spec.get("attacks")).items()
            if registry.attacks.get(name.split("@")[0]).reads_crafting}


def plan_malicious(sweep: Sweep) -> list[Cell]:
    """The malicious level's cell, once: the user's federation under ``threat.server: malicious``
    (added to ``sweep.federations``), with ``CAUGHT_BY`` after the user's defenses where it stacks,
    attacked in the audited rounds by the attacks that read crafted updates; none when
    :func:`malicious_problem` says why."""
    from clients.defenses import build_defenses

    if malicious_problem(sweep) is not None or any(f.config.threat.server == "malicious" for f in sweep.federations):
        return []
    user, config = sweep.spec["audit"], sweep.federations[0].config
    overrides: dict = {"threat.server": "malicious"}
    try:
        build_defenses([*config.defenses, CAUGHT_BY], task=config.model.task)
        if config.federation.client_app is None:  # a user's ClientApp applies its own defenses
            overrides["defenses"] = [CAUGHT_BY]
    except ConfigError:  # does not stack with the user's defenses: the cost of being caught is not measured
        pass
    budget = AuditBudget(**sweep.spec["budget"])
    rounds = audited_rounds(config.federation.rounds)
    federation, scenario = federation_of(user, "", overrides, rounds, budget, None)
    sweep.federations.append(federation)
    return [cell_of(federation, _readers(sweep), rounds, MALICIOUS, budget, scenario)]


def not_attacked(sweep: Sweep, rows: list[dict]) -> dict[str, dict[str, str]]:
    """Level -> round -> why the audit did not attack that cell."""
    leaks = _exact_by_round(rows)
    first = AuditBudget(**sweep.spec["budget"]).clients
    reason = (f"not attacked: no attack rebuilt a graph exactly in this round's first {first} update(s) at the "
              "strongest level, which gives the server more")
    rounds = audited_rounds(sweep.federations[0].config.federation.rounds)
    out = {level: {str(rnd): reason for rnd in rounds if rnd not in leaks} for level in LEVELS if level != STRONGEST}
    malicious = malicious_problem(sweep)
    out[MALICIOUS] = {} if malicious is None else {str(rnd): malicious for rnd in rounds}
    return out


def majority_rate(config: RunConfig) -> float | None:
    """The test accuracy of always predicting the test split's most frequent class (None without
    a test split or for regression): the floor a trained classifier must clear."""
    import numpy as np

    from fedgraph_sim.scenario import cached_scenario

    scenario = cached_scenario(config.model_dump_json())
    if not len(scenario.test) or scenario.dataset.task_type != "classification":
        return None
    labels = np.asarray(scenario.dataset.labels)[scenario.test]
    return float(np.bincount(labels.astype(int)).max() / len(labels))


def describe(sweep: Sweep, rows: list[dict], what_if: Sweep | None = None) -> dict:
    """What the audit's facts say about how it was run (``report.audit_facts``): the user's
    federation, the audited rounds, the budget, the threat levels, the cells not attacked and why,
    the majority-class rate, the what-if changes not tried."""
    config = sweep.federations[0].config
    return {"config": {"name": config.name, "dataset": config.data.dataset,
                       "clients": config.federation.num_clients, "rounds": config.federation.rounds,
                       "train": config.train.model_dump(mode="json"), "defenses": config.defenses},
            "rounds": audited_rounds(config.federation.rounds), "budget": sweep.spec["budget"],
            "levels": list(THREATS), "level_text": LEVEL_TEXT, "not_attacked": not_attacked(sweep, rows),
            "majority_rate": majority_rate(config),
            "skipped": what_if.spec.get("skipped", {}) if what_if is not None else {}}
