"""Reconstruction metrics (aligned and matched, and GRAIN's GSM) and their aggregation."""

from fedgraph_sim.metrics.aggregate import aggregate, bootstrap_ci
from fedgraph_sim.metrics.alignment import ALIGNMENTS, identity_alignment, matched_alignment
from fedgraph_sim.metrics.gsm import GSM_METRICS, EvaluationGNN, gsm, gsm_with_order, match_nodes
from fedgraph_sim.metrics.reconstruction import (ENTRY_SETS, METRICS, PRIOR_OF, graph_metrics,
                                                 score_reconstruction)

__all__ = ["ALIGNMENTS", "ENTRY_SETS", "GSM_METRICS", "METRICS", "PRIOR_OF", "EvaluationGNN",
           "aggregate", "bootstrap_ci", "graph_metrics", "gsm", "gsm_with_order", "identity_alignment",
           "match_nodes", "matched_alignment", "score_reconstruction"]
