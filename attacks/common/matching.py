"""The gradient-matching objective shared by the optimisation attacks.

``GradientMatcher(model, observed)`` evaluates the attacked model (the round's global weights)
densely on dummy inputs, takes the parameter gradient of the training loss with
``create_graph=True``, and returns its distance to the observed gradient, so the distance can be
differentiated with respect to the dummy inputs.
"""

from __future__ import annotations

from typing import Callable, Sequence

import torch
from torch import Tensor

from attacks.common.distances import DISTANCES
from fedgraph_sim.models import GraphClassifier, classification_loss


class GradientMatcher:
    """``loss``: the training loss the server configured (``AttackerKnowledge.loss``)."""

    def __init__(self, model: GraphClassifier, observed: dict[str, Tensor], distance: str = "l2",
                 loss: str = "cross_entropy") -> None:
        self.model, self.loss = model, loss
        named = [(n, p) for n, p in model.named_parameters()]
        self.params = [p for _, p in named]
        dtype = self.params[0].dtype
        self.target = [observed[n].to(dtype) for n, _ in named]
        self.distance: Callable[[Sequence[Tensor], Sequence[Tensor]], Tensor] = DISTANCES[distance]

    def __call__(self, x: Tensor, adj: Tensor, mask: Tensor, labels: Tensor) -> Tensor:
        """``labels``: class indices ``[B]`` (long) or class probabilities ``[B, C]``."""
        loss = classification_loss(self.model.forward_dense(x, adj, mask), labels, self.loss)
        grads = torch.autograd.grad(loss, self.params, create_graph=True)
        return self.distance(grads, self.target)
