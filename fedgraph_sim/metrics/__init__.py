"""Reconstruction metrics: one catalogue (name, header, direction, prior, function), the
alignments, GRAIN's GSM, scoring one reconstruction, and aggregation over graphs.

GSM and scoring (torch, networkx) load on first use, so that reading results and writing tables
does not; GRAIN's GSM function itself is ``fedgraph_sim.metrics.gsm.gsm`` (the package attribute
``gsm`` is its module once anything has imported it).
"""

from fedgraph_sim.exports import lazy_exports
from fedgraph_sim.metrics.aggregate import aggregate, bootstrap_ci
from fedgraph_sim.metrics.alignment import ALIGNMENTS, identity_alignment, matched_alignment
from fedgraph_sim.metrics.catalogue import (CATALOGUE, METRICS, PLACES, PRIORS, Metric, direction_note,
                                            metric, metric_column, prior_note, shown_in)
from fedgraph_sim.metrics.reconstruction import ENTRY_SETS

__getattr__, _lazy = lazy_exports(__name__, {"EvaluationGNN": "gsm", "gsm_with_order": "gsm", "match_nodes": "gsm",
                                             "graph_metrics": "score", "score_reconstruction": "score"})

__all__ = ["ALIGNMENTS", "CATALOGUE", "ENTRY_SETS", "METRICS", "PLACES", "PRIORS", "Metric", "aggregate",
           "bootstrap_ci", "direction_note", "identity_alignment", "matched_alignment", "metric", "metric_column",
           "prior_note", "shown_in", *_lazy]
