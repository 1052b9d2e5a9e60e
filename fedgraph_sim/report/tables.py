"""Tables: the rich terminal table of a summary, and the report's markdown tables per dataset."""

from __future__ import annotations

import math

from rich.table import Table

from fedgraph_sim.report.groups import Group
from fedgraph_sim.report.inputs import paper_row

SHORT = {"feature_mse": "feat MSE", "node_type_accuracy": "type ACC", "adj_auc": "AUC",
         "adj_ap": "AP", "edge_accuracy": "edge ACC", "degree_distance": "deg dist",
         "spectral_distance": "spec dist", "gsm0": "GSM-0", "gsm1": "GSM-1", "gsm2": "GSM-2",
         "full_iso": "FULL", "full_repo": "FULL repo"}
#: The terminal summary's columns (every metric is in summary.csv).
TERMINAL_METRICS = ("feature_mse", "node_type_accuracy", "adj_auc", "adj_ap", "gsm0", "gsm2", "full_iso")
#: The metrics of the markdown tables, in the papers' order of interest.
TABLE_METRICS = ("node_type_accuracy", "adj_auc", "adj_ap", "feature_mse", "edge_accuracy")


def _nan(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _cell(mean: float, gain: float = float("nan")) -> str:
    if _nan(mean):
        return "-"
    return f"{mean:.3f}" if _nan(gain) else f"{mean:.3f} ({gain:+.3f})"


def summary_table(summary: list[dict], title: str = "attack results") -> Table:
    """Terminal table of ``results.summarize`` entries; the dataset, test accuracy and epsilon
    columns appear only when they say something (several datasets, any value present)."""
    with_dataset = len({e.get("dataset", "") for e in summary}) > 1
    with_accuracy = any(not _nan(e.get("test_accuracy_mean")) for e in summary)
    with_epsilon = any(not _nan(e.get("defense_epsilon_max")) for e in summary)
    table = Table(title=title)
    for column in ("dataset",) * with_dataset + ("attack", "defense", "alignment", "graphs"):
        table.add_column(column, no_wrap=True)
    for metric in TERMINAL_METRICS:
        table.add_column(SHORT[metric], justify="right", no_wrap=True)
    for column in ("test acc",) * with_accuracy + ("ε",) * with_epsilon:
        table.add_column(column, justify="right", no_wrap=True)
    for entry in summary:
        graphs = str(entry["graphs"]) + (f" ({entry['failed']} failed)" if entry["failed"] else "")
        table.add_row(*(entry.get("dataset", ""),) * with_dataset,
                      entry["attack"], entry["defense"], entry["alignment"], graphs,
                      *(_cell(entry.get(f"{m}_mean", math.nan), entry.get(f"gain_{m}_mean", math.nan)) for m in TERMINAL_METRICS),
                      *(_cell(entry.get("test_accuracy_mean", math.nan)),) * with_accuracy,
                      *(_cell(entry.get("defense_epsilon_max", math.nan)),) * with_epsilon)
    table.caption = ("mean over attacked graphs (std and counts in summary.csv); (+x.xxx): information "
                     "gain over the gradient-free prior on the same graphs (majority_type for features "
                     "and types, aux_mean_adjacency for structure)"
                     + ("; test acc: the global model's held-out accuracy" if with_accuracy else "")
                     + ("; ε: DP-SGD epsilon spent" if with_epsilon else ""))
    return table


def number(value: float) -> str:
    # A diverged attack's feature MSE reaches 1e11: keep such cells short.
    return f"{value:.4f}" if abs(value) < 1e4 else f"{value:.3e}"


def mean_std(agg: dict) -> str:
    """``0.1234 ± 0.0056`` from an ``aggregate`` result, ``-`` when nothing was aggregated."""
    if not agg["count"] or _nan(agg["mean"]):
        return "-"
    return f"{number(agg['mean'])} ± {number(agg['std'])}"


def _graphs(group: Group) -> str:
    statuses = group.statuses
    failed = ", ".join(f"{n} {status}" for status, n in sorted(statuses.items()) if status != "ok")
    return f"{statuses.get('ok', 0)}" + (f" ({failed})" if failed else "")


def _escape(text: str) -> str:
    return str(text).replace("|", "\\|")


def _table(groups: list[Group], alignment: str, reference: dict) -> list[str]:
    # Utility and epsilon do not depend on the alignment: the identity table carries them.
    with_accuracy = alignment == "identity" and any(g.test_accuracy()["count"] for g in groups)
    with_epsilon = alignment == "identity" and any(not math.isnan(g.epsilon()) for g in groups)
    extra = ["test acc"] * with_accuracy + ["ε"] * with_epsilon
    header = ["attack", "defense", "graphs", *(SHORT[m] for m in TABLE_METRICS), *extra]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for g in groups:
        cells = [_escape(g.attack), _escape(g.defense), _graphs(g),
                 *(mean_std(g.metric(f"{alignment}_{m}")) for m in TABLE_METRICS)]
        if with_accuracy:
            accuracy = g.test_accuracy()
            cells.append(mean_std(accuracy) + (f" (n={accuracy['count']})" if accuracy["count"] else ""))
        if with_epsilon:
            cells.append("-" if math.isnan(g.epsilon()) else f"{g.epsilon():.3g}")
        lines.append("| " + " | ".join(cells) + " |")
        paper = paper_row(reference, g.dataset, g.defense, g.attack) if alignment == "identity" else {}
        if paper:
            values = [f"*{paper[m]:.4f}*" if m in paper else "" for m in TABLE_METRICS]
            lines.append("| " + " | ".join([f"*{_escape(g.attack)} (paper)*", f"*{_escape(g.defense)}*", "",
                                            *values, *[""] * len(extra)]) + " |")
    return lines


def _caption(alignment: str, groups: list[Group], reference: dict) -> str:
    how = ("identity alignment: reconstructed node i is scored against true node i, the papers' "
           "convention" if alignment == "identity" else
           "matched alignment: reconstructed nodes are first matched to true nodes (Hungarian)")
    text = (f"Cells: mean ± std over the attacked graphs with status ok ({how}). graphs: ok graphs, "
            "then failed rows by status. type ACC, AUC, AP and edge ACC: higher means more leakage; "
            "feat MSE: lower means more leakage.")
    if alignment == "identity":
        if any(g.test_accuracy()["count"] for g in groups):
            text += (" test acc: held-out accuracy of the global model after the last round, mean ± std "
                     "over the n distinct federations (seeds) of the setting.")
        if any(not math.isnan(g.epsilon()) for g in groups):
            text += (" ε: the largest DP-SGD epsilon (delta in the rows) any attacked client had spent "
                     "by its attacked round.")
        if any(paper_row(reference, g.dataset, g.defense, g.attack) for g in groups):
            text += f" Italic rows: the paper's numbers ({reference.get('source', 'reference.yaml')})."
    return text


def markdown_tables(groups: list[Group], reference: dict) -> str:
    """Per dataset: an identity-alignment table (with test accuracy, epsilon and the paper's rows)
    and a matched-alignment table, attack-major, defenses by family then strength."""
    out = []
    for dataset in dict.fromkeys(g.dataset for g in groups):
        mine = [g for g in groups if g.dataset == dataset]
        out.append(f"## Results: {dataset or 'unnamed dataset'}\n")
        for alignment in ("identity", "matched"):
            out += [f"### {alignment.capitalize()} alignment\n", _caption(alignment, mine, reference) + "\n",
                    "\n".join(_table(mine, alignment, reference)) + "\n"]
    return "\n".join(out)
