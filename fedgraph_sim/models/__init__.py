"""GNN graph classifiers (registered conv types: gcn, gat, sage) and their training loss."""

from fedgraph_sim.models import convs  # noqa: F401  (registers gcn, gat, sage)
from fedgraph_sim.models.classifier import GraphClassifier, dense_pool, to_dense
from fedgraph_sim.models.loss import LOSSES, classification_loss

__all__ = ["LOSSES", "GraphClassifier", "classification_loss", "dense_pool", "to_dense"]
