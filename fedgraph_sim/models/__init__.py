"""GNN graph classifiers (registered conv types: gcn, gat, sage)."""

from fedgraph_sim.models import convs  # noqa: F401  (registers gcn, gat, sage)
from fedgraph_sim.models.classifier import GraphClassifier, dense_pool, to_dense

__all__ = ["GraphClassifier", "dense_pool", "to_dense"]
