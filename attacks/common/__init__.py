"""Machinery shared by the optimisation attacks: dummy graphs, gradient distances, label rules,
the gradient-matching objective and the optimisation loops."""

from attacks.common.distances import DISTANCES, cosine_distance, l2_distance
from attacks.common.dummy import DummyGraphs, schema_softmax, symmetric_adjacency
from attacks.common.labels import (batch_labels, idlg_label, label_counts, label_from_bias, labels_from_counts,
                                  mean_probability)
from attacks.common.matching import GradientMatcher, simulation_problem
from attacks.common.optimize import adam, lbfgs

__all__ = ["DISTANCES", "DummyGraphs", "batch_labels", "GradientMatcher", "adam", "cosine_distance", "idlg_label",
           "l2_distance", "label_counts", "label_from_bias", "labels_from_counts", "lbfgs", "mean_probability",
           "schema_softmax", "simulation_problem", "symmetric_adjacency"]
