"""Sweep specs: a base run config and axes, expanded into federations and attack cells.

    name: graphdlg_table9
    reference: graphdlg_table9          # optional: a paper table in reference_<paper>.yaml
    victim_graphs: 100                  # optional: rounds = min(this, client 0's partition)
    base: {...}                         # run-config keys over default.yaml
    axes:
      datasets: [MUTAG, {dataset: PROTEINS, max_nodes: 126}]   # names or data-section mappings
      seeds: [0, 1]
      attacks: [graphdlg, majority_type]
      defenses:                          # each item is one stack; list-valued parameters are grids
        - none
        - {name: dp_gradients, sigma: [0.05, 0.1]}
        - [{name: prune, p: [0.5, 0.9]}, {name: dp_gradients, sigma: 0.01}]

One federation runs per (dataset, defense setting, seed), capturing what the server observes; one
cell per (federation, attack) replays the capture to that attack. Everything is validated here,
before anything is written.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from fedgraph_sim.config import DEFAULT_CONFIG, RunConfig, defense_label, validate_config
from fedgraph_sim.errors import ConfigError, require
from fedgraph_sim.runtime.reproduction import load_reference, merge_tree

SPEC_KEYS = ("name", "reference", "victim_graphs", "base", "axes")
AXES = ("datasets", "seeds", "attacks", "defenses")


@dataclass(frozen=True)
class DefenseSetting:
    stack: list[dict]
    family: str  # e.g. "dp_gradients", "prune+dp_gradients", "none"
    param: str | None  # the swept parameter, e.g. "sigma"
    strength: float  # its value (0 for no defense)

    @property
    def label(self) -> str:
        return defense_label(self.stack)


@dataclass
class Federation:
    id: str
    config: RunConfig
    defense: DefenseSetting

    def columns(self) -> dict[str, Any]:
        d = self.defense
        return {"defense_family": d.family, "defense_param": d.param, "defense_strength": d.strength}


@dataclass
class Cell:
    id: str
    federation: Federation
    attack: str
    config: RunConfig


@dataclass
class Sweep:
    name: str
    spec: dict
    folder: Path  # where the spec file lives (reference tables are looked up there)
    federations: list[Federation] = field(default_factory=list)
    cells: list[Cell] = field(default_factory=list)
    reference: dict = field(default_factory=dict)


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_.=," else "_" for c in text)


def _short_hash(obj: Any) -> str:
    return hashlib.sha1(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:8]


def _numeric(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def expand_defenses(item: Any, index: int) -> list[DefenseSetting]:
    """One axis item (``none``, a mapping, or a list of mappings) -> its grid of settings."""
    if item in (None, "none", []):
        return [DefenseSetting([], "none", None, 0.0)]
    entries = [item] if isinstance(item, dict) else item
    require(isinstance(entries, list) and all(isinstance(e, dict) and "name" in e for e in entries),
            f"axes.defenses.{index}", "each item is none, a defense mapping with a name, or a list of them")
    grid = [(j, key, values) for j, entry in enumerate(entries) for key, values in entry.items()
            if key != "name" and isinstance(values, list)]
    for j, key, values in grid:
        require(len(values) > 0, f"axes.defenses.{index}.{key}", "an empty grid")
    family = "+".join(str(e["name"]) for e in entries)
    settings = []
    for combo in itertools.product(*[values for _, _, values in grid]):
        stack = copy.deepcopy(entries)
        for (j, key, _), value in zip(grid, combo):
            stack[j][key] = value
        if grid:
            param, strength = grid[0][1], combo[0]
        else:  # a fixed stack: its first numeric parameter, if any
            numeric = [(k, v) for k, v in stack[0].items() if k != "name" and _numeric(v)]
            param, strength = numeric[0] if numeric else (None, math.nan)
        require(_numeric(strength) or param is None, f"axes.defenses.{index}.{param}",
                f"swept values must be numbers (got {strength!r})")
        settings.append(DefenseSetting(stack, family, param, float(strength)))
    return settings


def _axis(axes: dict, key: str, default: list) -> list:
    values = axes.get(key, default)
    require(isinstance(values, list) and len(values) > 0, f"axes.{key}", "must be a non-empty list")
    return values


def load_sweep(path: str | Path) -> Sweep:
    path = Path(path)
    require(path.is_file(), "--config", f"no such file {path}")
    try:
        spec = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"--config: {path} is not valid YAML ({str(exc).splitlines()[0]})") from None
    return build_sweep(spec, path.parent)


def build_sweep(spec: dict, folder: Path) -> Sweep:
    """Expand and validate ``spec``; raises ConfigError naming the key."""
    from clients.defenses import ClientTurn, build_defenses
    from fedgraph_sim.scenario import build_scenario

    import attacks  # noqa: F401  (registers the attacks)
    from attacks.base import build_attack

    require(isinstance(spec, dict), "--config", "a sweep spec is a mapping")
    for key in spec:
        require(key in SPEC_KEYS, key, f"no such sweep key; valid keys: {', '.join(SPEC_KEYS)}")
    axes = spec.get("axes") or {}
    require(isinstance(axes, dict), "axes", "must be a mapping")
    for key in axes:
        require(key in AXES, f"axes.{key}", f"no such axis; valid axes: {', '.join(AXES)}")
    require(isinstance(spec.get("base") or {}, dict), "base", "must be a mapping of run-config keys")
    victims = spec.get("victim_graphs")
    require(victims is None or (isinstance(victims, int) and not isinstance(victims, bool) and victims >= 1),
            "victim_graphs", f"must be an integer >= 1 (got {victims!r})")
    base = merge_tree(yaml.safe_load(DEFAULT_CONFIG.read_text()), spec.get("base") or {})
    name = spec.get("name", "sweep")
    sweep = Sweep(name=name, spec=spec, folder=Path(folder),
                  reference=load_reference(Path(folder), spec.get("reference")))
    if isinstance(axes.get("attacks"), list):  # per-attack settings in base refer to these
        base.setdefault("attack", {})["names"] = axes["attacks"]
    base_config = validate_config(copy.deepcopy(base))
    datasets = _axis(axes, "datasets", [base_config.data.dataset])
    seeds = _axis(axes, "seeds", [base_config.seed])
    attack_names = _axis(axes, "attacks", list(base_config.attack.names))
    settings = []
    for i, item in enumerate(_axis(axes, "defenses", ["none"])):
        for setting in expand_defenses(item, i):
            try:
                build_defenses(setting.stack)
            except ConfigError as exc:  # name the axis item: defenses.J.key -> axes.defenses.I[.J].key
                where = f"axes.defenses.{i}" + ("" if isinstance(item, dict) else ".\\1")
                raise ConfigError(re.sub(r"^defenses\.(\d+)", where, str(exc))) from None
            settings.append(setting)
    for name_ in attack_names:
        params = base_config.attack.params.get(name_)
        build_attack(str(name_).split("@")[0], params, key="axes.attacks")

    scenarios: dict[str, Any] = {}
    for dataset, seed, setting in itertools.product(datasets, seeds, settings):
        data = {"dataset": dataset} if isinstance(dataset, str) else dict(dataset)
        require("dataset" in data, "axes.datasets", f"each entry is a name or a mapping with 'dataset' (got {dataset!r})")
        tree = merge_tree(copy.deepcopy(base), {"data": data, "seed": seed, "defenses": setting.stack})
        tree["attack"] = {**tree.get("attack", {}), "names": [], "params": {}, "limit": {}, "time_budgets": {}}
        fed_id = _slug(f"{data['dataset']}_s{seed}_{setting.label}")[:80] + "-" + _short_hash([data, seed, setting.stack])
        tree["name"] = _slug(f"{name}-{data['dataset']}-s{seed}")
        config = validate_config(tree)
        key = json.dumps([data, seed])
        if key not in scenarios:
            scenarios[key] = build_scenario(config)
        clients = scenarios[key].clients
        if spec.get("victim_graphs"):
            config.federation.rounds = min(int(spec["victim_graphs"]), len(clients[0]))
        train = config.train
        build_defenses(setting.stack).validate([
            ClientTurn(len(c), train.batch_size, train.local_steps, config.federation.rounds) for c in clients])
        federation = Federation(fed_id, config, setting)
        sweep.federations.append(federation)
        for attack in attack_names:
            own = {key: {attack: getattr(base_config.attack, key)[attack]}
                   if attack in getattr(base_config.attack, key) else {}
                   for key in ("params", "limit", "time_budgets")}
            attack_cfg = config.attack.model_copy(update={"names": [attack], **own})
            cell_config = config.model_copy(update={"attack": attack_cfg})
            sweep.cells.append(Cell(f"{fed_id}__{_slug(attack)}", federation, attack, cell_config))
    return sweep
