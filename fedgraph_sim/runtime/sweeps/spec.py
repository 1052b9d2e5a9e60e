"""Sweep specs: a base run config and axes, expanded into federations and attack cells.

    name: graphdlg_table9
    reference: graphdlg_table9          # optional: a paper table (beside the spec, else packaged)
    victim_graphs: 100                  # optional: rounds = min(this, client 0's partition)
    metrics: [node_type_accuracy, adj_auc]   # optional: the tables' columns (report, terminal)
    base: {...}                         # run-config keys over default.yaml
    axes:
      datasets: [MUTAG, {dataset: PROTEINS, max_nodes: 126}]   # names or data-section mappings
      seeds: [0, 1]
      attacks: [graphdlg, majority_type]
      defenses:                          # each item is one stack; list-valued parameters are grids
        - none
        - {name: dp_gradients, sigma: [0.05, 0.1]}
        - [{name: prune, p: [0.5, 0.9]}, {name: dp_gradients, sigma: 0.01}]
      settings:                          # each item: dotted run-config keys; list values are grids
        - {train.batch_size: [1, 4, 16]}
        - {train.local_steps: 5, train.batch_size: 4}
        - {label: wide, model.hidden: 300, train.lr: [0.1, 0.3]}   # "wide,lr=0.1", "wide,lr=0.3"

One federation runs per (dataset, setting, defense setting, seed), capturing what the server
observes; one cell per (federation, attack) replays the capture to that attack. Everything is
validated here, before anything is written. ``metrics`` means what it means in a reproduction
config: the metric columns of the sweep's tables, checked by the same function; it changes no job.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fedgraph_sim.config import (ATTACK_GRANTS, DefenseSetting, RunConfig, default_tree, merge_tree, set_dotted,
                                 validate_config)
from fedgraph_sim import registry
from fedgraph_sim.errors import ConfigError, require
from fedgraph_sim.plugins import load_plugins
from fedgraph_sim.report.tables import table_metrics
from fedgraph_sim.rows.record import CELL_SEPARATOR
from fedgraph_sim.runtime.reproduction import load_reference
from fedgraph_sim.yaml_files import read_yaml

SPEC_KEYS = ("name", "reference", "victim_graphs", "metrics", "base", "axes")
AXES = ("datasets", "seeds", "attacks", "defenses", "settings")


@dataclass
class Federation:
    id: str
    config: RunConfig
    defense: DefenseSetting
    setting: str = ""  # the settings axis item's label, e.g. "batch_size=4,local_steps=5"

    def columns(self) -> dict[str, Any]:
        d = self.defense
        return {"defense_family": d.family, "defense_param": d.param, "defense_strength": d.strength,
                "setting": self.setting}


@dataclass
class Cell:
    id: str
    federation: Federation
    attack: str
    config: RunConfig
    columns: dict[str, Any] = field(default_factory=dict)  # added to its rows (an audit's threat level)


@dataclass
class Sweep:
    name: str
    spec: dict
    folder: Path  # where the spec file lives (reference tables are looked up there)
    federations: list[Federation] = field(default_factory=list)
    cells: list[Cell] = field(default_factory=list)
    reference: dict = field(default_factory=dict)
    metrics: tuple[str, ...] | None = None  # the spec's table columns; None: the report's and terminal's own


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_.=," else "_" for c in text)


def _short_hash(obj: Any) -> str:
    return hashlib.sha1(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:8]


def expand_defenses(item: Any, index: int) -> list[DefenseSetting]:
    """One axis item (``none``, a mapping, or a list of mappings) -> its grid of settings; the
    first list-valued parameter is the setting's strength."""
    if item in (None, "none", []):
        return [DefenseSetting.of([])]
    entries = [item] if isinstance(item, dict) else item
    require(isinstance(entries, list) and all(isinstance(e, dict) and "name" in e for e in entries),
            f"axes.defenses.{index}", "each item is none, a defense mapping with a name, or a list of them")
    grid = [(j, key, values) for j, entry in enumerate(entries) for key, values in entry.items()
            if key != "name" and isinstance(values, list)]
    for j, key, values in grid:
        require(len(values) > 0, f"axes.defenses.{index}.{key}", "an empty grid")
        for value in values:
            require(isinstance(value, (int, float)) and not isinstance(value, bool),
                    f"axes.defenses.{index}.{key}", f"swept values must be numbers (got {value!r})")
    settings = []
    for combo in itertools.product(*[values for _, _, values in grid]):
        stack = copy.deepcopy(entries)
        for (j, key, _), value in zip(grid, combo):
            stack[j][key] = value
        settings.append(DefenseSetting.of(stack, swept=grid[0][1] if grid else None))
    return settings


def expand_settings(item: Any, index: int) -> list[tuple[str, dict]]:
    """One settings-axis item (dotted keys, list values as grids) -> ``(label, overrides)`` each.
    An item's ``label`` names it in place of its fixed keys (a model, say); the swept keys follow."""
    require(isinstance(item, dict) and item and all(isinstance(k, str) for k in item), f"axes.settings.{index}",
            "each item is a mapping of dotted run-config keys, e.g. {train.batch_size: [1, 4]}")
    item = dict(item)
    name = item.pop("label", None)
    require(name is None or (isinstance(name, str) and re.fullmatch(r"[\w.-]+", name)),
            f"axes.settings.{index}.label", f"a name of letters, digits, '_', '.' or '-' (got {name!r})")
    require(bool(item), f"axes.settings.{index}", "a label needs run-config keys to name")
    grid = [(k, v if isinstance(v, list) else [v]) for k, v in item.items()]
    for key, values in grid:
        require(len(values) > 0, f"axes.settings.{index}.{key}", "an empty grid")
    shown = [k for k, values in grid if name is None or len(values) > 1]
    out = []
    for combo in itertools.product(*[values for _, values in grid]):
        overrides = dict(zip((k for k, _ in grid), combo))
        label = ",".join(([name] if name else []) + [f"{k.rsplit('.', 1)[-1]}={overrides[k]}" for k in shown])
        out.append((label, overrides))
    return out


def spec_differences(stored: Any, spec: Any, prefix: str = "") -> list[str]:
    """The dotted keys at which two specs differ (``[]`` when they are the same)."""
    if isinstance(stored, dict) and isinstance(spec, dict):
        return [d for key in dict.fromkeys([*stored, *spec])
                for d in spec_differences(stored.get(key, _MISSING), spec.get(key, _MISSING), f"{prefix}{key}.")]
    return [] if stored == spec else [prefix.rstrip(".") or "the whole spec"]


_MISSING = object()


def _axis(axes: dict, key: str, default: list) -> list:
    values = axes.get(key, default)
    require(isinstance(values, list) and len(values) > 0, f"axes.{key}", "must be a non-empty list")
    return values


def load_sweep(path: str | Path) -> Sweep:
    path = Path(path)
    return build_sweep(read_yaml(path) or {}, path.parent)


def _only(granted: Any, attacks: list[str]) -> Any:
    """A threat grant narrowed to ``attacks`` (a list names attacks; a bool is kept)."""
    return [a for a in granted if a in attacks] if isinstance(granted, list) else granted


def build_sweep(spec: dict, folder: Path) -> Sweep:
    """Expand and validate ``spec``; raises ConfigError naming the key. Every federation and
    every cell is checked by the runs' own validation path (``resolve`` and ``Session``)."""
    from clients.defenses import build_defenses
    from fedgraph_sim.runtime.session import Session, resolve

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
    base = merge_tree(default_tree(), spec.get("base") or {})
    name = spec.get("name", "sweep")
    require(isinstance(name, str) and name != "" and not any(c in name for c in "/\\ "), "name",
            f"a sweep's name names its directory: non-empty, without spaces or slashes (got {name!r})")
    sweep = Sweep(name=name, spec=spec, folder=Path(folder),
                  reference=load_reference(Path(folder), spec.get("reference")),
                  metrics=table_metrics(spec["metrics"]) if "metrics" in spec else None)
    if isinstance(axes.get("attacks"), list):  # per-attack settings in base refer to these
        if isinstance(base.get("plugins"), list):  # a plugin's attack is known once it is imported
            load_plugins(base["plugins"])
        for name in axes["attacks"]:  # named by the axis, before the base config's own check
            if isinstance(name, str):
                registry.attacks.check(name.split("@")[0], key="axes.attacks")
        base.setdefault("attack", {})["names"] = axes["attacks"]
    base_config = validate_config(copy.deepcopy(base))
    datasets = _axis(axes, "datasets", [base_config.data.dataset])
    seeds = _axis(axes, "seeds", [base_config.seed])
    attack_names = _axis(axes, "attacks", list(base_config.attack.names))
    settings = []
    for i, item in enumerate(_axis(axes, "defenses", ["none"])):
        for setting in expand_defenses(item, i):
            try:
                build_defenses(setting.stack, base_config.model.task)
            except ConfigError as exc:  # name the axis item: defenses.J.key -> axes.defenses.I[.J].key
                where = f"axes.defenses.{i}" + ("" if isinstance(item, dict) else ".\\1")
                raise ConfigError(re.sub(r"^defenses\.(\d+)", where, str(exc))) from None
            settings.append(setting)
    for name_ in base_config.attack.params:  # as a run refuses parameters for an attack it does not run
        require(name_ in attack_names, f"base.attack.params.{name_}",
                f"'{name_}' is not in axes.attacks ({', '.join(map(str, attack_names))})")
    for name_ in attack_names:
        params = base_config.attack.params.get(name_)
        build_attack(str(name_), params, key="axes.attacks")
    variants = [v for i, item in enumerate(_axis(axes, "settings", [None]))
                for v in ([("", {})] if item is None else expand_settings(item, i))]

    scenarios: dict[str, Any] = {}
    for dataset, (label, overrides), seed, setting in itertools.product(datasets, variants, seeds, settings):
        tree = set_dotted(copy.deepcopy(base), overrides)
        if "dataset" in (overrides.get("data") or {}) or "data.dataset" in overrides:  # a setting's own dataset
            require("datasets" not in axes, "axes.settings",
                    f"'{label}' names its own dataset, so the sweep cannot also have axes.datasets")
            dataset = tree["data"]
        data = {"dataset": dataset} if isinstance(dataset, str) else dict(dataset)
        require("dataset" in data, "axes.datasets",
                f"each entry is a name or a mapping with 'dataset' (got {dataset!r})")
        tree = merge_tree(tree, {"data": data, "seed": seed, "defenses": setting.stack,
                                 "name": _slug(f"{name}-{data['dataset']}-s{seed}")})
        tree["attack"] = {**tree.get("attack", {}), "names": [], "params": {}, "limit": {}, "time_budgets": {}}
        tree["threat"] = {**tree.get("threat", {}), **{grant: _only(getattr(base_config.threat, grant), [])
                                                       for grant in ATTACK_GRANTS}}
        key = json.dumps([data, seed, overrides], default=str)
        config, scenarios[key] = resolve(tree, victim_graphs=victims, scenario=scenarios.get(key))
        Session(config, scenario=scenarios[key])  # defenses planned against every client's turn
        # ids hash the whole configuration: a changed setting is a new job, never an old result
        stem = _slug(f"{data['dataset']}_s{seed}_{label + '_' if label else ''}{setting.label}")[:80]
        fed_id = stem + "-" + _short_hash(config.model_dump(mode="json"))
        federation = Federation(fed_id, config, setting, label)
        sweep.federations.append(federation)
        for attack in attack_names:
            cell_tree = config.model_dump(mode="json")
            cell_tree["attack"].update(names=[attack], **{
                part: {attack: getattr(base_config.attack, part)[attack]}
                      if attack in getattr(base_config.attack, part) else {}
                for part in ("params", "limit", "time_budgets")})
            for grant in ATTACK_GRANTS:
                cell_tree["threat"][grant] = _only(getattr(base_config.threat, grant), [attack])
            cell_config = validate_config(cell_tree)
            Session(cell_config, scenario=scenarios[key])
            cell_id = f"{fed_id}{CELL_SEPARATOR}{_slug(attack)}-{_short_hash(cell_config.model_dump(mode='json'))}"
            sweep.cells.append(Cell(cell_id, federation, attack, cell_config))
    return sweep
