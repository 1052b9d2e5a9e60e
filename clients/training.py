"""Local training inside a client: FedSGD (one batch, exact gradient) and FedAvg (local SGD)."""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import torch
from torch_geometric.data import Batch, Data

from fedgraph_sim.dp_audit.canaries import dirac_gradients, is_gradient_canary
from fedgraph_sim.models import DenseForward, GraphClassifier, classification_loss, example_losses, to_dense

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


def round_batches(sampling: str, indices: np.ndarray, batch_size: int, steps: int, round: int,
                  seed: int, client_key: int) -> list[np.ndarray]:
    """The batches of one round's local steps under ``train.sampling``: ``random`` draws each
    afresh, ``epoch`` walks the partition, ``repeat`` takes one batch as ``epoch`` would (one per
    round) and trains on it at every step."""
    if sampling == "epoch":
        return epoch_batches(indices, batch_size, steps, round, seed, client_key)
    if sampling == "repeat":
        return epoch_batches(indices, batch_size, 1, round, seed, client_key) * steps
    return sample_batches(indices, batch_size, steps, batch_rng(seed, round, client_key))


def loss_on(model: GraphClassifier, graphs: Sequence[Data], loss: str = "cross_entropy") -> torch.Tensor:
    """The mean loss over the batch's graphs, or over its labelled nodes (``train_mask``) when
    the model classifies nodes."""
    return classification_loss(*model.logits_and_targets(Batch.from_data_list(list(graphs))), loss)


def per_node_gradients(model: GraphClassifier, graph: Data, loss: str = "cross_entropy") -> dict[str, torch.Tensor]:
    """The gradient of each labelled node's own loss ``L_v``, by parameter name, ``[nodes, *shape]``
    in node order: the leaky client of GLG's Node-2 threat (Sinha et al., arXiv:2411.19440,
    Alg. 2), which reveals one gradient per node instead of their mean. ``torch.func.jacrev``
    vectorises the per-node backward passes (a vmap over the node losses)."""
    x, adj, mask = to_dense(graph)
    labelled = graph.train_mask.nonzero().view(-1)
    dense = DenseForward(model)
    params = {n: p.detach() for n, p in dense.named_parameters()}

    def node_losses(p: dict[str, torch.Tensor]) -> torch.Tensor:
        logits = torch.func.functional_call(dense, p, (x, adj, mask))[0, labelled]
        return example_losses(logits, graph.node_y[labelled], loss)

    jac = torch.func.jacrev(node_losses)(params)
    return {n.removeprefix("model."): g.detach() for n, g in jac.items()}


def mean_gradient(model: GraphClassifier, graphs: Sequence[Data],
                  loss: str = "cross_entropy") -> tuple[dict[str, torch.Tensor], float]:
    """The exact gradient of the mean training loss over ``graphs``, by parameter name (a gradient
    canary's own gradient is its Dirac: ``fedgraph_sim.dp_audit.canaries``)."""
    params = dict(model.named_parameters())
    canaries = [g for g in graphs if is_gradient_canary(g)]
    if canaries:
        real = [g for g in graphs if not is_gradient_canary(g)]
        zeros = {n: torch.zeros_like(p) for n, p in params.items()}
        grads, value = mean_gradient(model, real, loss) if real else (zeros, 0.0)
        diracs = dirac_gradients(canaries, [(n, tuple(p.shape)) for n, p in params.items()])
        return {n: (len(real) * grads[n] + diracs[n].sum(0).to(p.dtype)) / len(graphs)
                for n, p in params.items()}, value
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


def defended_update(model: GraphClassifier, batches: Sequence[Sequence[Data]], defenses, rng: torch.Generator,
                    lr: float, loss: str = "cross_entropy") -> tuple[dict[str, torch.Tensor], float]:
    """A client's update under its defenses, from the weights ``model`` holds (those sent).

    The local pass runs inside the defenses' training hooks with their gradient function: one
    FedSGD gradient for one batch, else SGD over ``batches``. The defenses then act on the update
    itself: the gradient, or the weight delta ``W_new - W_sent`` in FedAvg.

    Args:
        model: the client's model, loaded with the sent weights (it trains in place).
        batches: the turn's batches (one per local step).
        defenses: the client's :class:`clients.defenses.DefenseStack`, its turn begun.
        rng: the generator every defense draws its noise from.
        lr: the local learning rate (FedAvg).
        loss: the training loss's name.

    Returns:
        The reply's arrays (the gradient, or the new weights) and the mean training loss.
    """
    fedsgd = len(batches) == 1
    sent = None if fedsgd else {k: v.detach().clone() for k, v in model.state_dict().items()}  # SGD moves them
    with defenses.training(model, rng):
        gradient_fn = defenses.gradient_fn(rng)
        if fedsgd:
            update, value = fedsgd_gradient(model, batches[0], gradient_fn, loss)
        else:
            update, value = fedavg_weights(model, batches, lr, gradient_fn, loss)
    if fedsgd:
        return defenses.apply(update, rng), value
    delta = defenses.apply({k: update[k] - sent[k] for k in update}, rng)
    return {k: sent[k] + delta[k] for k in update}, value
