"""The whole-graph test: replay the client's FedSGD step on a candidate graph and compare
gradients (GRAIN, Drencheva et al., ICLR 2025, Sec. 5.3).

``distance(types, edges)`` runs the attacked model (the round's global weights, float64) on the
candidate, takes the parameter gradient of the configured loss for every possible label, and
returns the smallest mean over parameter tensors of ``||grad_candidate - grad_client||_F`` (the
official code's distance; the paper writes the Frobenius norm), with the label that attains it.
``label_gradients`` and ``batch_distance`` do the same for the members of a batch, whose mean
gradient the client sent (``batch.py``).
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

    def label_gradients(self, types, edges) -> list[list[Tensor]]:
        """The candidate's parameter gradients for each possible label: ``[label][tensor]``."""
        self.evaluations += 1
        x, adj = self.dense(types, edges)
        logits = self.model.forward_dense(x, adj)
        out = []
        for c in range(self.num_classes):
            loss = classification_loss(logits, torch.tensor([c]), self.loss)
            out.append([g.detach() for g in torch.autograd.grad(loss, self.params, retain_graph=c < self.num_classes - 1)])
        return out

    def gap(self, grads: list[Tensor]) -> float:
        """The official distance between ``grads`` and the client's gradient."""
        return float(torch.stack([(g - t).norm() for g, t in zip(grads, self.target)]).mean())

    def batch_distance(self, members: list[tuple[list[Tensor], int]]) -> float:
        """The distance of the mean gradient of a batch, each member given as its per-tensor
        gradients and a multiplicity, to the client's gradient."""
        total = sum(k for _, k in members)
        mean = [sum(g[i] * k for g, k in members) / total for i in range(len(self.target))]
        return self.gap(mean)

    def distance(self, types, edges) -> tuple[float, int]:
        """The smallest distance over the labels, and the label that attains it."""
        gaps = [self.gap(grads) for grads in self.label_gradients(types, edges)]
        label = min(range(len(gaps)), key=gaps.__getitem__)
        return gaps[label], label
