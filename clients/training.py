"""Local training inside a client: FedSGD (one batch, exact gradient) and FedAvg (local SGD)."""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import torch
from torch_geometric.data import Batch, Data

from fedgraph_sim.models import GraphClassifier, classification_loss

# (model, graphs, loss name) -> (gradient by parameter name, loss value)
GradientFn = Callable[[GraphClassifier, Sequence[Data], str], tuple[dict[str, torch.Tensor], float]]


def batch_rng(seed: int, round: int, client_key: int) -> np.random.Generator:
    """The batch sampler of one (seed, round, client): reproducible, independent across clients."""
    return np.random.default_rng([seed, round, client_key])


def sample_batches(indices: np.ndarray, batch_size: int, steps: int,
                   rng: np.random.Generator) -> list[np.ndarray]:
    """``steps`` batches drawn without replacement within a batch (with, across batches)."""
    size = min(batch_size, len(indices))
    return [np.sort(rng.choice(indices, size=size, replace=False)) for _ in range(steps)]


def epoch_batches(indices: np.ndarray, batch_size: int, steps: int, round: int, seed: int,
                  client_key: int) -> list[np.ndarray]:
    """The batches of ``round`` (1-based) when the client walks seeded per-epoch permutations of
    its partition: round r, step t takes the next ``batch_size`` positions of that walk."""
    size = min(batch_size, len(indices))
    out = []
    for t in range(steps):
        first = ((round - 1) * steps + t) * size
        positions = range(first, first + size)
        batch = [np.random.default_rng([seed, client_key, p // len(indices)]).permutation(indices)[p % len(indices)]
                 for p in positions]
        out.append(np.sort(np.array(batch)))
    return out


def loss_on(model: GraphClassifier, graphs: Sequence[Data], loss: str = "cross_entropy") -> torch.Tensor:
    batch = Batch.from_data_list(list(graphs))
    logits = model(batch.x, batch.edge_index, batch.batch)
    return classification_loss(logits, batch.y.view(-1), loss)


def mean_gradient(model: GraphClassifier, graphs: Sequence[Data],
                  loss: str = "cross_entropy") -> tuple[dict[str, torch.Tensor], float]:
    """The exact gradient of the mean training loss over ``graphs``, by parameter name."""
    params = dict(model.named_parameters())
    loss = loss_on(model, graphs, loss)
    grads = torch.autograd.grad(loss, list(params.values()))
    return {n: g.detach() for n, g in zip(params, grads)}, loss.item()


def fedsgd_gradient(model: GraphClassifier, graphs: Sequence[Data], gradient_fn: GradientFn | None = None,
                    loss: str = "cross_entropy") -> tuple[dict[str, torch.Tensor], float]:
    """One batch's gradient (``gradient_fn``, e.g. DP-SGD's, or the plain mean gradient)."""
    model.train()
    return (gradient_fn or mean_gradient)(model, graphs, loss)


def fedavg_weights(model: GraphClassifier, batches: Sequence[Sequence[Data]], lr: float,
                   gradient_fn: GradientFn | None = None,
                   loss: str = "cross_entropy") -> tuple[dict[str, torch.Tensor], float]:
    """Plain SGD (no momentum, no weight decay) over ``batches``; returns the new weights."""
    model.train()
    losses = []
    loss_name = loss
    for graphs in batches:
        grads, loss = (gradient_fn or mean_gradient)(model, graphs, loss_name)
        with torch.no_grad():
            for name, param in model.named_parameters():
                param.add_(grads[name], alpha=-lr)
        losses.append(loss)
    return {n: t.detach().clone() for n, t in model.state_dict().items()}, float(np.mean(losses))
