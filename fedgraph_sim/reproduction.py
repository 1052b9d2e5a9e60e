"""Reproduction configs: one base run config, several cases, and a paper's reported numbers.

A reproduction YAML holds ``reference`` (a table key in ``reference_<paper>.yaml`` beside it),
``base`` (run-config keys over ``default.yaml``), ``cases`` (each a ``label`` and dotted ``set``
overrides) and optionally ``victim_graphs`` (rounds = min(victim_graphs, the victim partition
size): one victim graph per FedSGD round). ``markdown`` renders our summary beside the paper's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import yaml

from fedgraph_sim.config import DEFAULT_CONFIG, RunConfig, validate_config
from fedgraph_sim.errors import ConfigError
from fedgraph_sim.metrics import METRICS

HEADERS = {"feature_mse": "feat MSE", "node_type_accuracy": "type ACC", "adj_auc": "AUC",
           "adj_ap": "AP", "edge_accuracy": "edge ACC", "degree_distance": "deg dist",
           "spectral_distance": "spec dist"}


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


def load_reproduction(path: str | Path, overrides: list[str] = (), only: list[str] | None = None):
    """``(spec, cases, reference)`` with every case's config validated up front."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"--config: no such file {path}")
    spec = yaml.safe_load(path.read_text()) or {}
    for key in ("base", "cases"):
        if key not in spec:
            raise ConfigError(f"{path.name}: a reproduction config needs '{key}'")
    default = yaml.safe_load(DEFAULT_CONFIG.read_text())
    extra = {}
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"{item}: overrides are dotted key=value pairs")
        key, raw = item.split("=", 1)
        extra[key.strip()] = yaml.safe_load(raw)
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


def _fmt(mean: float, std: float | None = None) -> str:
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "-"
    return f"{mean:.4f}" if std is None else f"{mean:.4f} ± {std:.4f}"


def _with_gain(entry: dict, metric: str) -> str:
    """``mean ± std [Δ gain vs prior]``: the information gain over the gradient-free prior on
    the same graphs, and the prior's own value there."""
    text = _fmt(entry[f"{metric}_mean"], entry[f"{metric}_std"])
    gain, prior = entry.get(f"gain_{metric}_mean"), entry.get(f"prior_{metric}_mean")
    if gain is None or math.isnan(gain):
        return text
    return f"{text} [Δ {gain:+.4f} vs {prior:.4f}]"


def markdown(label: str, summary: list[dict], reference: dict, note: str = "") -> str:
    """One case: our rows (attack x alignment, mean ± std) with the paper's row under each attack."""
    paper = reference.get("values", {}).get(label, {})
    paper_metrics = reference.get("metrics", list(METRICS))
    lines = [f"### {label}", ""]
    if note:
        lines += [note, ""]
    lines += ["Cells: mean ± std over attacked graphs [Δ information gain vs the gradient-free prior "
              "on the same graphs: majority_type for feature MSE and type ACC, aux_mean_adjacency "
              "for AUC, AP and edge ACC]. Italic rows: the paper.", ""]
    lines.append("| attack | alignment | graphs | " + " | ".join(HEADERS[m] for m in METRICS) + " |")
    lines.append("|---|---|---|" + "---|" * len(METRICS))
    for entry in summary:
        cells = [_with_gain(entry, m) for m in METRICS]
        failed = f" ({entry['failed']} failed)" if entry["failed"] else ""
        lines.append(f"| {entry['attack']} | {entry['alignment']} | {entry['graphs']}{failed} | "
                     + " | ".join(cells) + " |")
        if entry["alignment"] == "identity" and entry["attack"] in paper:
            values = dict(zip(paper_metrics, paper[entry["attack"]]))
            lines.append(f"| *{entry['attack']} (paper)* | *identity* | | "
                         + " | ".join(f"*{_fmt(values[m])}*" if m in values else "" for m in METRICS) + " |")
    return "\n".join(lines) + "\n"
