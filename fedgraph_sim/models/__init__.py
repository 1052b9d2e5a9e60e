"""GNN graph and node classifiers (registered conv types: gcn, gat, sage), their training loss and
their evaluation on held-out graphs."""

from fedgraph_sim.models import convs  # noqa: F401  (registers gcn, gat, sage)
from fedgraph_sim.models.classifier import DenseForward, GraphClassifier, build_model, dense_pool, to_dense
from fedgraph_sim.models.evaluate import evaluate
from fedgraph_sim.models.loss import LOSSES, classification_loss, example_losses

__all__ = ["LOSSES", "DenseForward", "GraphClassifier", "build_model", "classification_loss", "dense_pool", "evaluate",
           "example_losses", "to_dense"]
