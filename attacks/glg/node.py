r"""GLG's node-classification attackers (Sinha, Liu, Du, Shen, "Gradient Inversion Attack on
Graph Neural Networks", arXiv:2411.19440, Sec. 5, Algs. 1 and 2).

- Node-1 (:func:`invert_target`): the gradient of ONE target node's loss, nothing known about
  the graph. The dummy is a star, the target at its root and ``d_tree`` leaves (Alg. 1 optimises
  the target and its neighbours only: our reading of its "two-level tree"); its features are fitted
  so that the gradient of the root's loss matches, under the cosine distance (Eq. 12).
- Node-2a/b/c (:func:`invert_subgraph`): one gradient per node of the subgraph (a leaky client),
  X known (a), A known (b) or neither (c). The dummy's per-node gradients
  :math:`\nabla_W L_{v_i}(\hat X, \hat A)` are matched node by node,
  :math:`D = \frac1N \sum_i (1 - \cos(\hat g_i, g_i))`, plus the regularisers of Eq. 14; the
  per-node gradients are one ``torch.func.jacrev`` (a vmap over the node losses).

The adjacency is the projected matrix of :mod:`attacks.glg.optim`; each node's label is
read off its own gradient (App. B): the one negative entry of the last layer's bias gradient.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from attacks.base import AttackContext
from attacks.common.distances import cosine_distance, per_node_cosine
from attacks.common.labels import label_counts, labels_from_counts
from attacks.common.dummy import DummyGraphs
from attacks.common.optimize import Schedule, minimise
from attacks.glg.optim import glg_dummy, glg_objective
from fedgraph_sim.models import DenseForward, GraphClassifier, example_losses


def node_labels(model: GraphClassifier, gradient: dict[str, Tensor]) -> Tensor:
    """Each row's label from its last-layer bias gradient ``[.., K]`` (App. B: the negative entry)."""
    return gradient[f"{model.final_linear_name}.bias"].argmin(-1)


@dataclass(frozen=True)
class NodeInversion:
    x: Tensor  # [N, D]
    adj: Tensor  # [N, N] edge probabilities (the star, for Node-1)
    labels: Tensor  # [N] the labels read off the gradients (Node-1: the targets')
    objective: float
    roots: list[int] | None = None  # Node-1: the rows of the recovered targets


def _node_losses(model: GraphClassifier, params: dict[str, Tensor], x: Tensor, adj: Tensor, labels: Tensor,
                 rows: Tensor, loss: str) -> Tensor:
    logits = torch.func.functional_call(DenseForward(model), params, (x[None], adj[None],
                                        torch.ones(1, x.size(0), dtype=torch.bool)))[0]
    return example_losses(logits[rows], labels, loss)


def _params(model: GraphClassifier) -> dict[str, Tensor]:
    return {f"model.{n}": p.detach() for n, p in model.named_parameters()}


def invert_subgraph(model: GraphClassifier, per_node: dict[str, Tensor], ctx: AttackContext, *,
                    x: Tensor | None = None, adj: Tensor | None = None, iterations: int = 2000, lr: float = 0.01,
                    alpha: float = 0.0, beta: float = 0.0, loss: str = "cross_entropy",
                    restarts: int = 1, symmetric: bool = False, feature_init: str | Tensor = "randn",
                    adjacency_init: str | float | Tensor = "bernoulli") -> NodeInversion:
    """Node-2: fit a subgraph of as many nodes as ``per_node`` has rows; ``x`` or ``adj`` given
    (Node-2a, Node-2b) stay fixed."""
    params = _params(model)
    target = {f"model.{k}": v.to(next(iter(params.values())).dtype) for k, v in per_node.items()}
    labels = node_labels(model, per_node)
    rows = torch.arange(len(labels))

    def distance(dummy: DummyGraphs) -> Tensor:
        xs, a = dummy.x(0), dummy.adjacency(0)
        return per_node_cosine(torch.func.jacrev(lambda p: _node_losses(model, p, xs, a, labels, rows, loss))(params),
                               target)

    fit = minimise(glg_dummy([len(labels)], model.convs[0].in_channels, xs=None if x is None else [x],
                             adjs=None if adj is None else [adj], symmetric=symmetric,
                             feature_init=feature_init, adjacency_init=adjacency_init),
                   glg_objective(distance, alpha, beta), ctx, Schedule(iterations=iterations, lr=lr, restarts=restarts),
                   ctx.generator())
    with torch.no_grad():
        return NodeInversion(x=fit.dummy.x(0).detach().clone(),
                             adj=fit.dummy.adjacencies[0].edge_scores().detach().clone(), labels=labels,
                             objective=fit.objective)


def star(leaves: int) -> Tensor:
    """The adjacency of a star, node 0 the root."""
    adj = torch.zeros(leaves + 1, leaves + 1)
    adj[0, 1:] = adj[1:, 0] = 1.0
    return adj


def target_labels(model: GraphClassifier, gradient: dict[str, Tensor], targets: int) -> Tensor:
    """The targets' labels: one target's from its bias gradient (App. B); for a batch, the label
    counts ``B (p_mean - grad b)`` with the uniform prediction (which target has which label is
    not recoverable, and the dummy's stars are interchangeable)."""
    if targets == 1:
        return node_labels(model, gradient).view(1)
    bias = gradient[f"{model.final_linear_name}.bias"]
    counts = label_counts(bias, targets, torch.full_like(bias, 1.0 / bias.numel()))
    return torch.tensor(labels_from_counts(counts))


def invert_target(model: GraphClassifier, gradient: dict[str, Tensor], ctx: AttackContext, *, leaves: int = 10,
                  iterations: int = 1000, lr: float = 0.01, loss: str = "cross_entropy",
                  restarts: int = 1, targets: int = 1) -> NodeInversion:
    """Node-1: fit a star's features so that the gradient of its root's loss matches ``gradient``;
    with ``targets`` B > 1 (batched Node-1, Table 8) B disjoint stars whose roots' mean loss does.
    ``labels`` are the targets', ``roots`` (in ``x``'s rows) the recovered targets."""
    gen = ctx.generator()
    params = _params(model)
    names = list(params)
    target = [gradient[k.removeprefix("model.")].to(params[names[0]].dtype) for k in names]
    labels = target_labels(model, gradient, targets)
    adj = torch.block_diag(*[star(leaves)] * targets)
    roots = torch.arange(targets) * (leaves + 1)

    def objective(dummy: DummyGraphs) -> Tensor:
        x = dummy.x(0)
        grads = torch.func.grad(lambda p: _node_losses(model, p, x, adj, labels, roots, loss).mean())(params)
        return cosine_distance([grads[k] for k in names], target)

    fit = minimise(glg_dummy([len(adj)], model.convs[0].in_channels, adjs=[adj]), objective, ctx,
                   Schedule(iterations=iterations, lr=lr, restarts=restarts), gen)
    return NodeInversion(x=fit.dummy.x(0).detach().clone(), adj=adj, labels=labels, objective=fit.objective,
                         roots=roots.tolist())
