r"""GLG's node-classification attackers (Sinha, Liu, Du, Shen, "Gradient Inversion Attack on
Graph Neural Networks", arXiv:2411.19440, Sec. 5, Algs. 1 and 2).

- Node-1 (:func:`invert_target`): the gradient of ONE target node's loss, nothing known about
  the graph. The dummy is the paper's "2-layer tree" (Sec. 6: "a depth-2 tree", "the degree of
  each node d_tree = 10"): the target at the root, ``d_tree`` children, each with ``d_tree``
  children of its own, which is a two-layer GNN's receptive field; every node's features are
  fitted so that the gradient of the root's loss matches, under the cosine distance (Eq. 12).
  ``depth=1`` is a star (root and ``d_tree`` leaves). With ``targets`` B > 1 (batched Node-1,
  Table 8) the dummy is B such trees, their roots' mean loss matched.
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


def tree(d_tree: int, depth: int = 2) -> Tensor:
    """The adjacency of a rooted tree in which every node above ``depth`` has ``d_tree`` children,
    node 0 the root, in breadth-first order (depth 1: a star)."""
    parents, level, size = [], [0], 1
    for _ in range(depth):
        nxt = []
        for parent in level:
            for _ in range(d_tree):
                parents.append((parent, size))
                nxt.append(size)
                size += 1
        level = nxt
    adj = torch.zeros(size, size)
    for u, v in parents:
        adj[u, v] = adj[v, u] = 1.0
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


def invert_target(model: GraphClassifier, gradient: dict[str, Tensor], ctx: AttackContext, *, d_tree: int = 10,
                  depth: int = 2, iterations: int = 1000, lr: float = 0.01, loss: str = "cross_entropy",
                  restarts: int = 1, targets: int = 1) -> NodeInversion:
    """Node-1: fit a tree's features so that the gradient of its root's loss matches ``gradient``;
    with ``targets`` B > 1, B trees (a batch of dummy graphs) whose roots' mean loss does. The
    returned ``x`` and ``adj`` stack the trees; ``roots`` are the targets' rows, ``labels`` theirs."""
    gen = ctx.generator()
    params = _params(model)
    names = list(params)
    target = [gradient[k.removeprefix("model.")].to(params[names[0]].dtype) for k in names]
    labels = target_labels(model, gradient, targets)
    shape = tree(d_tree, depth)
    size = len(shape)
    dense = DenseForward(model)

    def objective(dummy: DummyGraphs) -> Tensor:
        xs, adjs, mask = dummy.dense()

        def root_loss(p):
            logits = torch.func.functional_call(dense, p, (xs, adjs, mask))[:, 0]
            return example_losses(logits, labels, loss).mean()

        grads = torch.func.grad(root_loss)(params)
        return cosine_distance([grads[k] for k in names], target)

    fit = minimise(glg_dummy([size] * targets, model.convs[0].in_channels, adjs=[shape] * targets), objective, ctx,
                   Schedule(iterations=iterations, lr=lr, restarts=restarts), gen)
    x = torch.cat([fit.dummy.x(i).detach().clone() for i in range(targets)])
    return NodeInversion(x=x, adj=torch.block_diag(*[shape] * targets), labels=labels, objective=fit.objective,
                         roots=[i * size for i in range(targets)])
