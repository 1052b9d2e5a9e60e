"""The whole-graph test: replay the client's FedSGD step on a candidate graph and compare
gradients (GRAIN, Drencheva et al., ICLR 2025, Sec. 5.3).

``distance(types, edges)`` runs the attacked model (the round's global weights, float64) on the
candidate, takes the parameter gradient of the configured loss for every possible label, and
returns the smallest mean over parameter tensors of ``||grad_candidate - grad_client||_F`` (the
official code's distance; the paper writes the Frobenius norm), with the label that attains it.
"""

from __future__ import annotations

import torch
from torch import Tensor

from fedgraph_sim.models import GraphClassifier, classification_loss


class GradientScorer:
    def __init__(self, model: GraphClassifier, observed: dict[str, Tensor], type_rows: Tensor,
                 loss: str, num_classes: int) -> None:
        self.model, self.loss, self.num_classes = model, loss, num_classes
        self.params = [p for _, p in model.named_parameters()]
        self.target = [observed[name].to(torch.float64) for name, _ in model.named_parameters()]
        self.type_rows = type_rows.to(torch.float64)
        self.evaluations = 0

    def dense(self, types, edges) -> tuple[Tensor, Tensor]:
        n = len(types)
        adj = torch.zeros(n, n, dtype=torch.float64)
        if edges:
            index = torch.tensor(edges).T
            adj[index[0], index[1]] = 1.0
            adj[index[1], index[0]] = 1.0
        return self.type_rows[list(types)], adj

    def distance(self, types, edges) -> tuple[float, int]:
        self.evaluations += 1
        x, adj = self.dense(types, edges)
        logits = self.model.forward_dense(x, adj)
        best, label = float("inf"), 0
        for c in range(self.num_classes):
            loss = classification_loss(logits, torch.tensor([c]), self.loss)
            grads = torch.autograd.grad(loss, self.params, retain_graph=c < self.num_classes - 1)
            d = float(torch.stack([(g - t).norm() for g, t in zip(grads, self.target)]).mean())
            if d < best:
                best, label = d, c
        return best, label
