"""Reconstruction metrics (aligned and matched) and their aggregation."""

from fedgraph_sim.metrics.aggregate import aggregate
from fedgraph_sim.metrics.alignment import ALIGNMENTS, identity_alignment, matched_alignment
from fedgraph_sim.metrics.reconstruction import ENTRY_SETS, METRICS, PRIOR_OF, graph_metrics

__all__ = ["ALIGNMENTS", "ENTRY_SETS", "METRICS", "PRIOR_OF", "aggregate", "graph_metrics",
           "identity_alignment", "matched_alignment"]
