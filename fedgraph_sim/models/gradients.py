"""Per-graph gradients: each graph's own training-loss gradient in one ``torch.func.vmap`` over the
dense model (Opacus' per-sample hooks would treat node rows as samples and fail on PyG layers).
DP-SGD clips them; the DP audit's server replays them for its canaries."""

from __future__ import annotations

from typing import Sequence

import torch
from torch import Tensor, nn
from torch.func import functional_call, grad_and_value, vmap
from torch_geometric.data import Batch, Data

from fedgraph_sim.dp_audit.canaries import dirac_gradients, is_gradient_canary
from fedgraph_sim.models.classifier import DenseForward, to_dense
from fedgraph_sim.models.loss import classification_loss

Update = dict[str, Tensor]


def per_graph_gradients(model: nn.Module, graphs: Sequence[Data],
                        loss: str = "cross_entropy") -> tuple[Update, Tensor]:
    """``({name: [B, *shape]}, losses [B])``: each graph's own training-loss gradient (a gradient
    canary's is its Dirac, with loss 0: ``fedgraph_sim.dp_audit.canaries``).

    Args:
        model (nn.Module): a :class:`GraphClassifier` (vectorised over the dense forward) or a
            user's model (one backward pass per graph).
        graphs (Sequence[Data]): the batch, ``B`` graphs.
        loss (str, optional): the training loss. (default: ``"cross_entropy"``)
    """
    canary = [is_gradient_canary(g) for g in graphs]
    if any(canary):
        return _with_dirac_rows(model, graphs, canary, loss)
    if getattr(model, "user_model", False):
        return _one_by_one(model, graphs, loss)
    batch = Batch.from_data_list(list(graphs))
    x, adj, mask = to_dense(batch)
    y = batch.y.view(-1)
    dense = DenseForward(model)
    params = {f"model.{k}": v.detach() for k, v in model.named_parameters()}

    def loss_one(p, x1, a1, m1, y1):
        logits = functional_call(dense, p, (x1[None], a1[None], m1[None]))
        return classification_loss(logits, y1[None], loss)

    grads, losses = vmap(grad_and_value(loss_one), in_dims=(None, 0, 0, 0, 0))(params, x, adj, mask, y)
    return {k.removeprefix("model."): v for k, v in grads.items()}, losses


def _one_by_one(model: nn.Module, graphs: Sequence[Data], loss: str) -> tuple[Update, Tensor]:
    """A user's model (``fedgraph_sim.models.user``): one backward pass per graph through its own
    sparse forward. Its layers may not vectorise over graphs (batch norm over a graph's nodes,
    dropout), so no vmap."""
    params = dict(model.named_parameters())
    rows, losses = {n: [] for n in params}, []
    for graph in graphs:
        value = classification_loss(*model.logits_and_targets(Batch.from_data_list([graph])), loss)
        for n, g in zip(params, torch.autograd.grad(value, list(params.values()))):
            rows[n].append(g.detach())
        losses.append(value.detach())
    return {n: torch.stack(r) for n, r in rows.items()}, torch.stack(losses)


def _with_dirac_rows(model: nn.Module, graphs: Sequence[Data], canary: list[bool],
                     loss: str) -> tuple[Update, Tensor]:
    shapes = [(n, tuple(p.shape)) for n, p in model.named_parameters()]
    diracs = dirac_gradients([g for g, c in zip(graphs, canary) if c], shapes)
    real = [g for g, c in zip(graphs, canary) if not c]
    grads, losses = per_graph_gradients(model, real, loss) if real else ({}, torch.zeros(0))
    order = torch.tensor([i for i, c in enumerate(canary) if not c] + [i for i, c in enumerate(canary) if c])
    rows = torch.argsort(order)  # back to batch order
    out = {n: torch.cat([grads[n], diracs[n].to(p.dtype)])[rows] if real else diracs[n].to(p.dtype)[rows]
           for n, p in model.named_parameters()}
    return out, torch.cat([losses, torch.zeros(len(graphs) - len(real), dtype=losses.dtype)])[rows]
