"""The update-matching objective shared by the optimisation attacks.

``GradientMatcher(model, observed)`` evaluates the attacked model (the round's global weights)
densely on dummy inputs, takes the parameter gradient of the training loss with
``create_graph=True``, and returns its distance to the observed gradient, so the distance can be
differentiated with respect to the dummy inputs.

A FedAvg update is several local steps, not a gradient. :meth:`GradientMatcher.for_update` then
simulates the client's training, which the server configured itself (Geiping, Bauermeister,
Droege and Moeller, "Inverting Gradients - How easy is it to break privacy in federated learning?",
NeurIPS 2020, Sec. 5): ``local_steps`` plain SGD steps of learning rate ``lr`` from the global
weights, step s on the s-th block of ``batch_size`` dummy graphs, unrolled so the distance stays
differentiable in the dummies, and compares the simulated pseudo-gradient
``(W_0 - W_S) / (lr * S)`` with the observed one.
"""

from __future__ import annotations

from typing import Callable, Sequence

import torch
from torch import Tensor
from torch.func import functional_call

from attacks.common.distances import DISTANCES
from fedgraph_sim.models import DenseForward, GraphClassifier, classification_loss
from fedgraph_sim.threat import ObservedUpdate


def simulation_problem(update: ObservedUpdate) -> str | None:
    """Why an update cannot be matched (its local training not simulated), or None."""
    if update.observed == "secure_aggregate" and not update.exact:
        return "behind secure aggregation the server sees the mean of several clients' local training"
    return None


class GradientMatcher:
    """``loss``: the training loss the server configured (``AttackerKnowledge.loss``);
    ``local_steps`` > 1 simulates that many SGD steps of ``lr`` on blocks of ``batch_size``."""

    def __init__(self, model: GraphClassifier, observed: dict[str, Tensor], distance: str = "l2",
                 loss: str = "cross_entropy", local_steps: int = 1, lr: float = 1.0,
                 batch_size: int | None = None) -> None:
        self.model, self.loss = model, loss
        named = [(n, p) for n, p in model.named_parameters()]
        self.names = [n for n, _ in named]
        self.params = [p for _, p in named]
        dtype = self.params[0].dtype
        self.target = [observed[n].to(dtype) for n, _ in named]
        self.distance: Callable[[Sequence[Tensor], Sequence[Tensor]], Tensor] = DISTANCES[distance]
        self.local_steps, self.lr, self.batch_size = local_steps, lr, batch_size
        self._dense = DenseForward(model)

    @classmethod
    def for_update(cls, model: GraphClassifier, update: ObservedUpdate, distance: str = "l2",
                   loss: str = "cross_entropy") -> "GradientMatcher":
        """Matching the update as it was made: its gradient, or its local training simulated."""
        return cls(model, update.gradient, distance, loss, local_steps=update.local_steps, lr=update.lr,
                   batch_size=update.batch_size)

    @property
    def simulates(self) -> bool:
        return self.local_steps > 1

    @property
    def attack_input(self) -> str:
        """What is matched, for the rows: the gradient, or the client's local training simulated."""
        return "simulated_local_training" if self.simulates else "gradient"

    def __call__(self, x: Tensor, adj: Tensor, mask: Tensor, labels: Tensor) -> Tensor:
        """``labels``: class indices ``[B]`` (long) or class probabilities ``[B, C]``."""
        if not self.simulates:
            loss = classification_loss(self.model.forward_dense(x, adj, mask), labels, self.loss)
            grads = torch.autograd.grad(loss, self.params, create_graph=True)
            return self.distance(grads, self.target)
        size = self.batch_size or len(x) // self.local_steps
        weights = {f"model.{n}": p for n, p in zip(self.names, self.params)}
        for step in range(self.local_steps):
            block = slice(step * size, (step + 1) * size)
            logits = functional_call(self._dense, weights, (x[block], adj[block], mask[block]))
            loss = classification_loss(logits, labels[block], self.loss)
            grads = torch.autograd.grad(loss, list(weights.values()), create_graph=True)
            weights = {k: w - self.lr * g for (k, w), g in zip(weights.items(), grads)}
        scale = self.lr * self.local_steps
        pseudo = [(p - weights[f"model.{n}"]) / scale for n, p in zip(self.names, self.params)]
        return self.distance(pseudo, self.target)
