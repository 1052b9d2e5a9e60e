"""Reconstruction metrics: one catalogue (name, header, direction, prior, function), the
alignments, GRAIN's GSM, scoring one reconstruction, and aggregation over graphs."""

from fedgraph_sim.metrics.aggregate import aggregate, bootstrap_ci
from fedgraph_sim.metrics.alignment import ALIGNMENTS, identity_alignment, matched_alignment
from fedgraph_sim.metrics.catalogue import (CATALOGUE, METRICS, PRIORS, Metric, direction_note, metric,
                                            metric_column, prior_note)
from fedgraph_sim.metrics.gsm import EvaluationGNN, gsm, gsm_with_order, match_nodes
from fedgraph_sim.metrics.reconstruction import ENTRY_SETS
from fedgraph_sim.metrics.score import graph_metrics, score_reconstruction

__all__ = ["ALIGNMENTS", "CATALOGUE", "ENTRY_SETS", "METRICS", "PRIORS", "EvaluationGNN", "Metric", "direction_note",
           "aggregate", "bootstrap_ci", "graph_metrics", "gsm", "gsm_with_order", "identity_alignment",
           "match_nodes", "matched_alignment", "metric", "metric_column", "prior_note",
           "score_reconstruction"]
