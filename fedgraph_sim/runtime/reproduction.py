"""Reproduction configs: one base run config, several cases, and a paper's reported numbers.

A reproduction YAML holds ``reference`` (a table key in ``reference_<paper>.yaml`` beside it),
``base`` (run-config keys over ``default.yaml``), ``cases`` (each a ``label`` and dotted ``set``
overrides) and optionally ``victim_graphs`` (rounds = min(victim_graphs, the victim partition
size): one victim graph per FedSGD round), ``metrics`` (the table's columns, default the
reconstruction metrics) and ``alignments``. ``extends: OTHER.yaml`` takes another config's base
and cases (``cases`` may then list labels to keep); ``group_by: {num_nodes: [15, 25]}`` renders
one table per graph-size bucket (n <= 15, 16-25, >= 26) over the rows of all cases together.
``markdown`` renders our summary beside the paper's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import yaml

from fedgraph_sim.config import DEFAULT_CONFIG, RunConfig, parse_overrides, validate_config
from fedgraph_sim.errors import ConfigError
from fedgraph_sim.metrics import ALIGNMENTS, GSM_METRICS, METRICS

HEADERS = {"feature_mse": "feat MSE", "node_type_accuracy": "type ACC", "adj_auc": "AUC",
           "adj_ap": "AP", "edge_accuracy": "edge ACC", "degree_distance": "deg dist",
           "spectral_distance": "spec dist", "gsm0": "GSM-0", "gsm1": "GSM-1", "gsm2": "GSM-2",
           "full_iso": "FULL", "full_repo": "FULL (GSM-1 = 1)"}
#: The columns of a reproduction table unless its config names others.
DEFAULT_TABLE_METRICS = tuple(m for m in METRICS if m not in GSM_METRICS)


@dataclass
class Case:
    label: str
    config: RunConfig


def merge_tree(tree: dict, patch: dict) -> dict:
    out = dict(tree)
    for key, value in patch.items():
        out[key] = merge_tree(out.get(key, {}), value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def dotted_tree(patch: dict) -> dict:
    tree: dict = {}
    for dotted, value in patch.items():
        node = tree
        keys = dotted.split(".")
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        node[keys[-1]] = value
    return tree


def read_spec(path: Path) -> dict:
    """A reproduction YAML, with ``extends`` resolved (the other file's keys under this one's)."""
    try:
        spec = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path.name}: not valid YAML ({str(exc).splitlines()[0]})") from None
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
    if "extends" in spec:
        parent_path = path.parent / spec.pop("extends")
        if not parent_path.is_file():
            raise ConfigError(f"{path.name}: extends: no such file {parent_path.name}")
        parent = read_spec(parent_path)
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


def load_reproduction(path: str | Path, overrides: list[str] = (), only: list[str] | None = None):
    """``(spec, cases, reference)`` with every case's config validated up front."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"--config: no such file {path}")
    spec = read_spec(path)
    for key in ("base", "cases"):
        if key not in spec:
            raise ConfigError(f"{path.name}: a reproduction config needs '{key}'")
    default = yaml.safe_load(DEFAULT_CONFIG.read_text())
    extra = parse_overrides(overrides)
    for metric in spec.get("metrics", ()):
        if metric not in METRICS:
            raise ConfigError(f"{path.name}: metrics: unknown metric '{metric}'; valid: {', '.join(METRICS)}")
    for alignment in spec.get("alignments", ()):
        if alignment not in ALIGNMENTS:
            raise ConfigError(f"{path.name}: alignments: unknown '{alignment}'; valid: {', '.join(ALIGNMENTS)}")
    labels = [c["label"] for c in spec["cases"]]
    if only:
        unknown = [c for c in only if c not in labels]
        if unknown:
            raise ConfigError(f"--cases: unknown case {unknown[0]}; valid: {', '.join(labels)}")
    cases = []
    for case in spec["cases"]:
        if only and case["label"] not in only:
            continue
        tree = merge_tree(merge_tree(merge_tree(default, spec["base"]), dotted_tree(case.get("set", {}))), dotted_tree(extra))
        name = f"{tree.get('name', 'reproduce')}-{case['label']}".replace("<-", "from")
        tree["name"] = "".join(c if c.isalnum() or c in "-_.@" else "_" for c in name)
        cases.append(Case(case["label"], validate_config(tree)))
    return spec, cases, load_reference(path.parent, spec.get("reference"))


def load_reference(folder: Path, key: str | None) -> dict:
    """The paper table ``key`` (e.g. ``graphdlg_table9``) from ``reference_<paper>.yaml``."""
    if not key:
        return {}
    ref_file = Path(folder) / f"reference_{key.split('_')[0]}.yaml"
    tables = yaml.safe_load(ref_file.read_text()) if ref_file.is_file() else {}
    if key not in tables:
        raise ConfigError(f"reference: no table '{key}' in {ref_file.name}")
    return tables[key]


def table_columns(spec: dict) -> dict:
    """The ``metrics`` and ``alignments`` a reproduction config asks its tables to show."""
    return {"metrics": tuple(spec.get("metrics", DEFAULT_TABLE_METRICS)),
            "alignments": tuple(spec.get("alignments", ALIGNMENTS))}


def _fmt(mean: float, std: float | None = None) -> str:
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "-"
    return f"{mean:.4f}" if std is None else f"{mean:.4f} ± {std:.4f}"


def _percent(value) -> str:
    return "-" if value is None or math.isnan(value) else f"{100 * value:.1f}"


def _with_gain(entry: dict, metric: str) -> str:
    """``mean ± std [Δ gain vs prior]``: the information gain over the gradient-free prior on
    the same graphs, and the prior's own value there. GSM metrics, as the GRAIN paper reports
    them: in percent over every attacked graph (failures count 0), with the bootstrap 95% CI."""
    gain, prior = entry.get(f"gain_{metric}_mean"), entry.get(f"prior_{metric}_mean")
    if metric in GSM_METRICS:
        text = (f"{_percent(entry.get(f'{metric}_all_mean'))} [{_percent(entry.get(f'{metric}_ci_low'))}, "
                f"{_percent(entry.get(f'{metric}_ci_high'))}]")
        if gain is None or math.isnan(gain):
            return text
        return f"{text} [Δ {100 * gain:+.1f} vs {_percent(prior)}]"
    text = _fmt(entry[f"{metric}_mean"], entry[f"{metric}_std"])
    if gain is None or math.isnan(gain):
        return text
    return f"{text} [Δ {gain:+.4f} vs {prior:.4f}]"


def _paper_cell(metric: str, value) -> str:
    return f"*{_percent(value)}*" if metric in GSM_METRICS else f"*{_fmt(value)}*"


def markdown(label: str, summary: list[dict], reference: dict, note: str = "",
             metrics: tuple[str, ...] = DEFAULT_TABLE_METRICS,
             alignments: tuple[str, ...] = ALIGNMENTS) -> str:
    """One case: our rows (attack x alignment, mean ± std) with the paper's row under each attack."""
    paper = reference.get("values", {}).get(label, {})
    paper_metrics = reference.get("metrics", list(METRICS))
    lines = [f"### {label}", ""]
    if note:
        lines += [note, ""]
    legend = ("Cells: mean ± std over attacked graphs [Δ information gain vs the gradient-free prior "
              "on the same graphs: majority_type for feature MSE, type ACC and GSM-0, "
              "aux_mean_adjacency for the structure metrics]. Italic rows: the paper.")
    if any(m in GSM_METRICS for m in metrics):
        legend += (" GSM and FULL in %, over every attacked graph with failures as 0 [bootstrap 95% CI]"
                   "; their Δ over the graphs with a reconstruction.")
    lines += [legend, ""]
    lines.append("| attack | alignment | graphs | " + " | ".join(HEADERS[m] for m in metrics) + " |")
    lines.append("|---|---|---|" + "---|" * len(metrics))
    for entry in summary:
        if entry["alignment"] not in alignments:
            continue
        cells = [_with_gain(entry, m) for m in metrics]
        failed = f" ({entry.get('statuses', str(entry['failed']) + ' failed')})" if entry["failed"] else ""
        lines.append(f"| {entry['attack']} | {entry['alignment']} | {entry['graphs']}{failed} | "
                     + " | ".join(cells) + " |")
        if entry["alignment"] == alignments[0] and entry["attack"] in paper:
            values = dict(zip(paper_metrics, paper[entry["attack"]]))
            lines.append(f"| *{entry['attack']} (paper)* | *{alignments[0]}* | | "
                         + " | ".join(_paper_cell(m, values[m]) if m in values and values[m] is not None
                                      else "" for m in metrics) + " |")
    return "\n".join(lines) + "\n"
