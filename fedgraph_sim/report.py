"""Terminal tables from result rows (markdown and figures arrive with the sweep report)."""

from __future__ import annotations

import math

from rich.table import Table

from fedgraph_sim.metrics import METRICS

SHORT = {"feature_mse": "feat MSE", "node_type_accuracy": "type ACC", "adj_auc": "AUC",
         "adj_ap": "AP", "edge_accuracy": "edge ACC", "degree_distance": "deg dist",
         "spectral_distance": "spec dist"}


def _cell(mean: float, gain: float = float("nan")) -> str:
    if math.isnan(mean):
        return "-"
    return f"{mean:.3f}" if math.isnan(gain) else f"{mean:.3f} ({gain:+.3f})"


def summary_table(summary: list[dict], title: str = "attack results") -> Table:
    table = Table(title=title)
    for column in ("attack", "defense", "alignment", "graphs"):
        table.add_column(column, no_wrap=True)
    for metric in METRICS:
        table.add_column(SHORT[metric], justify="right", no_wrap=True)
    for entry in summary:
        graphs = str(entry["graphs"]) + (f" ({entry['failed']} failed)" if entry["failed"] else "")
        table.add_row(entry["attack"], entry["defense"], entry["alignment"], graphs,
                      *(_cell(entry[f"{m}_mean"], entry.get(f"gain_{m}_mean", math.nan))
                        for m in METRICS))
    table.caption = ("mean over attacked graphs (std and counts in summary.csv); (+x.xxx): information "
                     "gain over the gradient-free prior on the same graphs (majority_type for features "
                     "and types, aux_mean_adjacency for structure)")
    return table
