"""The optimisation engine shared by the gradient-matching attacks: parametrised dummy graphs,
gradient distances, regularisers, label rules, the update-matching objective and :func:`minimise`."""

from attacks.common.distances import DISTANCES, cosine_distance, l2_distance, per_node_cosine
from attacks.common.dummy import DummyGraphs
from attacks.common.labels import (batch_labels, idlg_label, label_counts, label_from_bias, labels_from_counts,
                                  mean_probability)
from attacks.common.matching import GradientMatcher, simulation_problem
from attacks.common.optimize import Fit, Schedule, minimise
from attacks.common.parametrisations import schema_softmax, symmetric_adjacency

__all__ = ["DISTANCES", "DummyGraphs", "Fit", "GradientMatcher", "Schedule", "batch_labels", "cosine_distance",
           "idlg_label", "l2_distance", "label_counts", "label_from_bias", "labels_from_counts", "mean_probability",
           "minimise", "per_node_cosine", "schema_softmax", "simulation_problem", "symmetric_adjacency"]
