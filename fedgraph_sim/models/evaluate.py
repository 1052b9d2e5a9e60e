"""The global model's utility on held-out graphs: accuracy, loss and, for two classes, the ROC
AUC (regression: RMSE and R2). The server evaluates it after every round; the records are
:mod:`fedgraph_sim.utility`'s."""

from __future__ import annotations

from typing import Sequence

import torch
from torch_geometric.data import Batch, Data

from fedgraph_sim.metrics.ranking import roc_auc
from fedgraph_sim.models.loss import classification_loss


@torch.no_grad()
def evaluate(model: torch.nn.Module, graphs: Sequence[Data], loss: str = "cross_entropy") -> dict[str, float]:
    """Accuracy and mean training loss (``train.loss``) of ``model`` (evaluation mode) on ``graphs``
    (on their labelled nodes, for a node classifier), and with two classes, both present, the ROC
    AUC of the score ``logit_1 - logit_0``; for a regression model (``mse``) the RMSE and the
    coefficient of determination R2 = 1 - SSE / SST instead of the accuracy.

    Args:
        model (torch.nn.Module): the global model (left in evaluation mode).
        graphs (Sequence[Data]): the held-out graphs, at least one.
        loss (str, optional): the training loss, one of ``LOSSES``. (default: ``"cross_entropy"``)

    Returns:
        ``test_loss``, ``test_graphs`` and ``test_accuracy`` (with ``test_auc``), or ``test_rmse``
        and ``test_r2`` (NaN for constant targets).
    """
    model.eval()
    logits, y = model.logits_and_targets(Batch.from_data_list(list(graphs)))
    out = {"test_loss": float(classification_loss(logits, y, loss)), "test_graphs": len(graphs)}
    if loss == "mse":
        error = logits[:, 0].double() - y.double()
        spread = float(((y.double() - y.double().mean()) ** 2).sum())
        out["test_rmse"] = float(error.pow(2).mean().sqrt())
        out["test_r2"] = 1.0 - float(error.pow(2).sum()) / spread if spread > 0 else float("nan")
    else:
        out["test_accuracy"] = float((logits.argmax(1) == y).float().mean())
        if logits.size(1) == 2 and y.dtype == torch.long and 0 < int(y.sum()) < len(y):
            out["test_auc"] = roc_auc((y == 1).numpy(), (logits[:, 1] - logits[:, 0]).double().numpy())
    return out
