"""Reproduction configs: one base run config, several cases, and a paper's reported numbers.

A reproduction YAML holds ``reference`` (a paper table, see :func:`load_reference`),
``base`` (run-config keys over ``default.yaml``), optionally ``set`` (dotted overrides for every
case, e.g. a width over the cases of the config it ``extends``), ``cases`` (each a ``label``, dotted
``set`` overrides and optionally its own ``victim_graphs``) and optionally ``victim_graphs`` (rounds =
min(victim_graphs, the victim partition size): one victim graph, or batch, per FedSGD round),
``metrics`` (the table's columns, default the reconstruction metrics) and ``alignments``.
``extends: OTHER.yaml`` takes another config's base and cases (``cases`` may then list labels to
keep); ``group_by: {num_nodes: [15, 25]}`` renders one table per graph-size bucket
(n <= 15, 16-25, >= 26) over the rows of all cases together. ``markdown`` renders our summary beside
the paper's (the report's table model, ``fedgraph_sim.report.tables``).

A case's config is validated as written here; the command resolves it (with ``victim_graphs``)
through the runs' one validation path, ``fedgraph_sim.runtime.session.resolve``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path

from fedgraph_sim.config import (RunConfig, default_tree, merge_tree, parse_overrides, set_dotted,
                                 validate_config)
from fedgraph_sim.errors import ConfigError
from fedgraph_sim.metrics import ALIGNMENTS, all_metrics, metric_names
from fedgraph_sim.report.tables import Grid, markdown as grid_markdown, summary_grid, table_metrics
from fedgraph_sim.yaml_files import read_yaml


def default_table_metrics() -> tuple[str, ...]:
    """The columns of a reproduction table unless its config names others: every metric but those
    GRAIN reports over all attacked graphs (GSM, FULL), which its configs name explicitly."""
    return tuple(m.name for m in all_metrics() if not m.counts_failures)


@dataclass
class Case:
    label: str
    tree: dict  # the run-config tree: default.yaml, the base, the case's and the command line's keys
    config: RunConfig  # validated as written (rounds not yet derived from victim_graphs)
    victim_graphs: int | None = None  # the case's, else the spec's


def read_spec(path: Path, key: str = "--config") -> dict:
    """A reproduction YAML, with ``extends`` resolved (the other file's keys under this one's)."""
    spec = read_yaml(path, key) or {}
    if not isinstance(spec, dict):
        raise ConfigError(f"{path.name}: a reproduction config is a mapping")
    cases = spec.get("cases")
    if cases is not None and not isinstance(cases, list):
        raise ConfigError(f"{path.name}: cases: a list (got {type(cases).__name__})")
    for i, case in enumerate(cases or ()):
        if "extends" in spec and isinstance(case, str):
            continue  # a label of the extended file's cases
        if not isinstance(case, dict) or not isinstance(case.get("label"), str):
            raise ConfigError(f"{path.name}: cases.{i}: each case is a mapping with a 'label' and a 'set'")
        if not isinstance(case.get("set", {}), dict):
            raise ConfigError(f"{path.name}: cases.{i}.set: a mapping of dotted keys to values")
    if not isinstance(spec.get("set", {}), dict):
        raise ConfigError(f"{path.name}: set: a mapping of dotted keys to values, for every case")
    if "extends" in spec:
        parent_path = path.parent / spec.pop("extends")
        parent = read_spec(parent_path, key=f"{path.name}: extends")
        keep = spec.pop("cases", None)
        spec = {**parent, **spec}
        if keep is not None:
            by_label = {c["label"]: c for c in parent["cases"]}
            unknown = [label for label in keep if label not in by_label]
            if unknown:
                raise ConfigError(f"{path.name}: cases: {unknown[0]} is not a case of {parent_path.name}")
            spec["cases"] = [by_label[label] for label in keep]
    return spec


def size_buckets(spec: dict) -> list[tuple[str, int, float]] | None:
    """``(label, low, high)`` node-count buckets of ``group_by.num_nodes`` (upper bounds)."""
    bounds = (spec.get("group_by") or {}).get("num_nodes")
    if not bounds:
        return None
    edges = [0] + [int(b) for b in bounds]
    out = [(f"n <= {edges[1]}", 0, edges[1])]
    out += [(f"{lo + 1} <= n <= {hi}", lo + 1, hi) for lo, hi in zip(edges[1:-1], edges[2:])]
    out.append((f"n >= {edges[-1] + 1}", edges[-1] + 1, float("inf")))
    return out


def split_labels(text: str, labels: list[str]) -> list[str]:
    """``--cases``' comma-separated labels, a label that has commas in it ("graph, SAGE") kept whole
    (the longest label that matches at each place, so "node, SAGE, shuffled" is not cut short)."""
    pieces, out, i = text.split(","), [], 0
    while i < len(pieces):
        ends = [j for j in range(len(pieces), i, -1) if ",".join(pieces[i:j]).strip() in labels]
        j = ends[0] if ends else i + 1
        out.append(",".join(pieces[i:j]).strip())
        i = j
    return out


def load_reproduction(path: str | Path, overrides: list[str] = (), only: str | list[str] | None = None):
    """``(spec, cases, reference)`` with every case's config validated up front."""
    path = Path(path)
    spec = read_spec(path)
    for key in ("base", "cases"):
        if key not in spec:
            raise ConfigError(f"{path.name}: a reproduction config needs '{key}'")
    default = default_tree()
    extra = parse_overrides(overrides)
    if "metrics" in spec:
        try:
            table_metrics(spec["metrics"])
        except ConfigError as exc:
            raise ConfigError(f"{path.name}: {exc}") from None
    for alignment in spec.get("alignments", ()):
        if alignment not in ALIGNMENTS:
            raise ConfigError(f"{path.name}: alignments: unknown '{alignment}'; valid: {', '.join(ALIGNMENTS)}")
    labels = [c["label"] for c in spec["cases"]]
    if isinstance(only, str):
        only = split_labels(only, labels)
    if only:
        unknown = [c for c in only if c not in labels]
        if unknown:
            raise ConfigError(f"--cases: unknown case {unknown[0]}; valid: {', '.join(labels)}")
    cases = []
    for case in spec["cases"]:
        if only and case["label"] not in only:
            continue
        tree = copy.deepcopy(merge_tree(default, spec["base"]))
        for overrides in (spec.get("set", {}), case.get("set", {}), extra):  # every case's, its own, the command line's
            tree = set_dotted(tree, overrides)
        name = f"{tree.get('name', 'reproduce')}-{case['label']}".replace("<-", "from")
        tree["name"] = "".join(c if c.isalnum() or c in "-_.@" else "_" for c in name)
        cases.append(Case(case["label"], tree, validate_config(copy.deepcopy(tree)),
                          case.get("victim_graphs", spec.get("victim_graphs"))))
    return spec, cases, load_reference(path.parent, spec.get("reference"))


#: The papers' reported numbers, packaged: ``reference_<paper>.yaml``, one mapping per table.
REFERENCES = Path(__file__).resolve().parents[1] / "references"


def load_reference(folder: Path, key: str | None) -> dict:
    """The paper table ``key`` (e.g. ``graphdlg_table9``): from ``reference_<paper>.yaml`` beside
    the spec when there is one (a user's own tables), else from the package's."""
    if not key:
        return {}
    name = f"reference_{str(key).split('_')[0]}.yaml"
    ref_file = next((f for f in (Path(folder) / name, REFERENCES / name) if f.is_file()), None)
    if ref_file is None:
        known = sorted(p.name for p in REFERENCES.glob("reference_*.yaml"))
        raise ConfigError(f"reference: no file {name} beside the spec or in the package (packaged: "
                          f"{', '.join(known)})")
    tables = read_yaml(ref_file, "reference") or {}
    if not isinstance(tables, dict) or key not in tables:
        valid = ", ".join(k for k in tables if not str(k).startswith("_")) if isinstance(tables, dict) else ""
        raise ConfigError(f"reference: no table '{key}' in {ref_file.name}; valid: {valid}")
    return tables[key]


def table_columns(spec: dict) -> dict:
    """The ``metrics`` and ``alignments`` a reproduction config asks its tables to show."""
    return {"metrics": tuple(spec["metrics"]) if "metrics" in spec else default_table_metrics(),
            "alignments": tuple(spec.get("alignments", ALIGNMENTS))}


def paper_values(reference: dict, label: str, attack: str) -> dict[str, float]:
    """The paper's ``{metric: value}`` for ``attack`` in the case ``label`` (empty if none)."""
    numbers = reference.get("values", {}).get(label, {}).get(attack)
    if not isinstance(numbers, list):
        return {}
    return {m: v for m, v in zip(reference.get("metrics", list(metric_names())), numbers) if v is not None}


def case_grid(label: str, summary: list[dict], reference: dict, style: str = "full",
              metrics: tuple[str, ...] | None = None,
              alignments: tuple[str, ...] = ALIGNMENTS) -> Grid:
    """One case: our rows (attack x alignment) with the paper's row under each attack's first."""
    entries = [e for e in summary if e["alignment"] in alignments]
    return summary_grid(entries, metrics or default_table_metrics(), ("attack", "alignment"), style=style, title=label,
                        paper=lambda e: paper_values(reference, label, e["attack"])
                        if e["alignment"] == alignments[0] else {})


def markdown(label: str, summary: list[dict], reference: dict, note: str = "",
             metrics: tuple[str, ...] | None = None,
             alignments: tuple[str, ...] = ALIGNMENTS) -> str:
    """One case's markdown section: heading, note, caption, table."""
    grid = case_grid(label, summary, reference, metrics=metrics, alignments=alignments)
    lines = [f"### {label}", ""] + ([note, ""] if note else []) + [grid.caption(), ""]
    return "\n".join(lines) + "\n" + grid_markdown(grid)
