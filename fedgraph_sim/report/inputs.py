"""What a report reads from a run or sweep directory: result rows, drawings and the paper table.

A sweep directory has ``sweep.yaml``, ``cells/<id>/drawings/*.json`` and ``federations/<id>/``; a
run directory has ``config.yaml``, ``drawings/*.json`` and its utility rows. Rows are completed
here so that everything downstream can rely on columns a single run does not write:
``defense_family``, ``defense_param``, ``defense_strength`` (NaN unless the stack has exactly one
numeric parameter) and ``test_accuracy`` (from the federation's utility rows if missing).
A sweep's tables show the columns its spec's ``metrics`` names (a run's ``config.yaml`` has a
``metrics`` section of its own, the scoring's ``entries``, so only ``sweep.yaml`` is read for them);
otherwise the default columns, with GSM-0, GSM-2 and FULL when a row was scored for them. The
run's ``plugins`` are imported first, so that a plugin's metric is a column like the package's.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from fedgraph_sim.config import DefenseSetting
from fedgraph_sim.errors import ConfigError
from fedgraph_sim.metrics import ALIGNMENTS, metric, shown_in
from fedgraph_sim.plugins import load_plugins
from fedgraph_sim.report.tables import table_metrics
from fedgraph_sim.rows.record import Row, federation_id
from fedgraph_sim.rows.store import RESULTS_JSONL, RESULTS_PARQUET, has_rows, read_rows
from fedgraph_sim.utility import final_utility, read_utility
from fedgraph_sim.yaml_files import read_yaml

REFERENCE = "reference.yaml"


@dataclass
class ReportInput:
    directory: Path
    name: str
    kind: str  # "sweep" or "run"
    rows: list[Row]
    drawings: list[dict] = field(default_factory=list)
    reference: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # problems met while reading, for report.md
    metrics: tuple[str, ...] = field(default_factory=lambda: shown_in("report"))  # the tables' metric columns
    # per federation, (dataset, setting, defense) -> its utility rows (round by round)
    utility: dict[tuple, list[list[dict]]] = field(default_factory=dict)


def _numeric(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def defense_setting(row: Row) -> tuple[str, str | None, float]:
    """``(family, param, strength)``: the sweep's columns, else derived from ``defense_stack`` as
    :class:`~fedgraph_sim.config.DefenseSetting` does for a fixed stack."""
    if row.get("defense_family") is not None:
        strength = row.get("defense_strength")
        return (str(row["defense_family"]), row.get("defense_param"),
                float(strength) if _numeric(strength) else math.nan)
    stack = row.get("defense_stack")
    if stack is None and row.get("defense", "none") != "none":
        return str(row["defense"]), None, math.nan  # nothing to parse: the label is its own family
    setting = DefenseSetting.of(list(stack or []))
    return setting.family, setting.param, setting.strength


def paper_row(reference: dict, dataset: str, defense: str, attack: str) -> dict[str, float]:
    """The paper's numbers for (defense label, attack) as ``{metric: value}``. Tables without
    defenses (e.g. GraphDLG Table 1) are keyed by dataset instead, which applies to ``none``."""
    values = reference.get("values")
    if not isinstance(values, dict):
        return {}
    by_attack = values.get(defense) or (values.get(dataset) if defense == "none" else None)
    numbers = by_attack.get(attack) if isinstance(by_attack, dict) else None
    if not isinstance(numbers, list):
        return {}
    return {m: float(v) for m, v in zip(reference.get("metrics") or [], numbers) if _numeric(v)}


def _default_metrics(rows: list[Row]) -> tuple[str, ...]:
    """The report's metrics, those counting failures (GRAIN's GSM and FULL) only if a row carries them."""
    def scored(name: str) -> bool:
        return any(row.get(f"{alignment}_{name}") is not None for row in rows for alignment in ALIGNMENTS)

    return tuple(m for m in shown_in("report") if not metric(m).counts_failures or scored(m))


def _table_metrics(spec: dict, kind: str, rows: list[Row], notes: list[str]) -> tuple[str, ...]:
    """A sweep spec's ``metrics``, else the default columns (also, with a note, when the stored list
    is not valid: the report is still written). A run's ``config.yaml`` has a ``metrics`` section of
    its own (the scoring's), so a run always takes the default."""
    if kind != "sweep" or "metrics" not in spec:
        return _default_metrics(rows)
    try:
        return table_metrics(spec["metrics"])
    except ConfigError as exc:
        notes.append(f"sweep.yaml: {exc}; the default columns are shown")
        return _default_metrics(rows)


def _read_yaml(path: Path, notes: list[str]) -> dict:
    """``path``'s mapping, or ``{}`` with a note: the report is written whatever a stored file holds."""
    if not path.is_file():
        return {}
    try:
        data = read_yaml(path, path.name)
    except ConfigError as exc:
        notes.append(f"{exc}; ignored")
        return {}
    return data if isinstance(data, dict) else {}


def _load_plugins(config: dict, notes: list[str]) -> None:
    """Import the run's ``plugins``, whose metrics its rows carry and its tables may show; one that
    no longer imports is a note (the report is written with the package's metrics)."""
    plugins = config.get("plugins") if isinstance(config, dict) else None
    if not isinstance(plugins, list):
        return
    try:
        load_plugins(plugins)
    except ConfigError as exc:
        notes.append(f"{exc}; its metrics are not shown")


def _federation_dir(row: Row, directory: Path, kind: str) -> Path:
    """The directory of the federation ``row`` was attacked in: a sweep cell's under
    ``federations/``, else the run directory itself (its ``utility`` rows)."""
    federation = federation_id(row) if kind == "sweep" else None
    return directory if federation is None else directory / "federations" / federation


def _with_utility(rows: list[Row], directory: Path, kind: str) -> list[dict]:
    """Fill ``test_accuracy``/``test_loss`` from the utility rows where a row lacks them (a single
    run's rows are written before its last round, so only its summary carries them)."""
    cache: dict[Path, dict] = {}
    out = []
    for row in rows:
        if row.get("test_accuracy") is None:
            source = _federation_dir(row, directory, kind)
            if source not in cache:
                cache[source] = final_utility(source)
            row = {**row, **{k: v for k, v in cache[source].items() if row.get(k) is None}}
        out.append(row)
    return out


def _utility_curves(rows: list[Row], directory: Path, kind: str) -> dict[tuple, list[list[dict]]]:
    """Each federation's round-by-round utility, keyed by what the report groups it by."""
    sources: dict[Path, tuple] = {}
    for row in rows:
        source = _federation_dir(row, directory, kind)
        sources.setdefault(source, (row["dataset"], row.get("setting") or "", row["defense"]))
    curves: dict[tuple, list[list[dict]]] = {}
    for source, key in sources.items():
        points = read_utility(source)
        if points:
            curves.setdefault(key, []).append(sorted(points, key=lambda p: p["round"]))
    return curves


def _drawings(directory: Path, notes: list[str]) -> list[dict]:
    paths = sorted(directory.glob("drawings/*.json")) + sorted(directory.glob("cells/*/drawings/*.json"))
    drawings, bad = [], 0
    for path in paths:
        try:
            drawing = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            bad += 1
            continue
        if isinstance(drawing, dict):
            drawings.append(drawing)
        else:
            bad += 1
    if bad:
        notes.append(f"drawings: {bad} unreadable file(s) ignored")
    return drawings


def load(directory: str | Path) -> ReportInput:
    """Read a run or sweep directory; a missing directory or results file is a ConfigError."""
    directory = Path(directory)
    if not directory.is_dir():
        raise ConfigError(f"{directory}: no such directory")
    if not has_rows(directory) and not (directory / "canaries.json").is_file():  # a DP audit's run has no rows
        raise ConfigError(f"{directory}: no {RESULTS_PARQUET} or {RESULTS_JSONL} here "
                          "(expected a run or sweep directory)")
    notes: list[str] = []
    kind = "sweep" if (directory / "sweep.yaml").is_file() else "run"
    spec = _read_yaml(directory / ("sweep.yaml" if kind == "sweep" else "config.yaml"), notes)
    _load_plugins(spec.get("base", {}) if kind == "sweep" else spec, notes)
    rows = _with_utility(read_rows(directory, notes.append), directory, kind)
    for row in rows:
        # Grouping keys are text everywhere downstream, even where a row has them null.
        for key, default in (("dataset", ""), ("attack", "?"), ("defense", "none")):
            row[key] = str(row.get(key) or default)
        row["defense_family"], row["defense_param"], row["defense_strength"] = defense_setting(row)
    return ReportInput(directory=directory, name=str(spec.get("name") or directory.name), kind=kind,
                       rows=rows, drawings=_drawings(directory, notes),
                       reference=_read_yaml(directory / REFERENCE, notes), notes=notes,
                       metrics=_table_metrics(spec, kind, rows, notes),
                       utility=_utility_curves(rows, directory, kind))
