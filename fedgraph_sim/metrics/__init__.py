"""Reconstruction metrics: one catalogue (name, header, direction, prior, function), the
alignments, GRAIN's GSM, scoring one reconstruction, and aggregation over graphs.

GSM and scoring (torch, networkx) load on first use, so that reading results and writing tables
does not; GRAIN's GSM function itself is ``fedgraph_sim.metrics.gsm.gsm`` (the package attribute
``gsm`` is its module once anything has imported it).
"""

from fedgraph_sim.exports import lazy_exports
from fedgraph_sim.metrics.aggregate import aggregate, bootstrap_ci, mean_interval, none_seen_bound, wilson_interval
from fedgraph_sim.metrics.alignment import ALIGNMENTS, identity_alignment, matched_alignment
from fedgraph_sim.metrics.catalogue import (PLACES, PRIORS, Metric, all_metrics, direction_note, metric,
                                            metric_column, metric_names, prior_note, register_metric, shown_in)
from fedgraph_sim.metrics.reconstruction import ENTRY_SETS

__getattr__, _lazy = lazy_exports(__name__, {"EvaluationGNN": "gsm", "gsm_with_order": "gsm", "match_nodes": "gsm",
                                             "graph_metrics": "score", "score_reconstruction": "score"})

__all__ = ["ALIGNMENTS", "ENTRY_SETS", "PLACES", "PRIORS", "Metric", "aggregate", "all_metrics", "bootstrap_ci",
           "direction_note", "identity_alignment", "matched_alignment", "mean_interval", "metric", "metric_column",
           "metric_names", "none_seen_bound", "prior_note", "register_metric", "shown_in", *_lazy, "wilson_interval"]
