r"""GLG's optimisation attack on a graph-classification gradient (Sinha et al., "Gradient
Inversion Attack on Graph Neural Networks", arXiv:2411.19440, Alg. 3).

Variants by what the attacker knows: Graph-a (X known, A recovered), Graph-b (A known, X
recovered), Graph-c (neither). Only the unknowns are variables. The objective is

.. math::
    \hat D = D_{\cos}\big(\nabla_W L(\hat X, \hat A), \nabla_W L\big)
             + \alpha \, \mathrm{tr}(\hat X^\top L \hat X) + \beta \lVert \hat A \rVert_F^2

(Eq. 14; :math:`\alpha = \beta = 0` is Eq. 12, which the paper uses on molecules), minimised with
Adam; after every step the adjacency is projected onto [0, 1] (Eq. 15). The adjacency is a plain
N x N matrix, as in the paper, or with ``symmetric=True`` its strict upper triangle mirrored with
a zero diagonal (GraphMI's convention). Defaults where the paper is silent: lr 0.01, 2000
iterations, Bernoulli(0.5) initial adjacency, N(0, 1) features. The output is the final
continuous adjacency, symmetrised (scored by AUC / AP), and a Bernoulli sample of it (scored by
accuracy).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
from torch import Tensor

from attacks.base import AttackContext
from attacks.common.dummy import DummyGraphs
from attacks.common.matching import GradientMatcher
from attacks.common.optimize import Schedule, minimise
from attacks.common.parametrisations import (FullAdjacency, ProjectedAdjacency, free, full_adjacency, known,
                                             projected_adjacency)
from attacks.common.regularisers import feature_smoothness, frobenius
from fedgraph_sim.models import GraphClassifier


@dataclass(frozen=True)
class GraphInversion:
    x: Tensor  # [N, D]
    adj_prob: Tensor  # [N, N], symmetric, zero diagonal, in [0, 1]
    adj_sample: Tensor  # a Bernoulli sample of adj_prob (upper triangle, mirrored)
    objective: float


def glg_dummy(node_counts: list[int], in_channels: int, *, xs: list[Tensor] | None = None,
              adjs: list[Tensor] | None = None, adjacency_init: str | float | Tensor = "bernoulli",
              symmetric: bool = False, feature_init: str | Tensor = "randn"):
    """The factory of GLG's dummy graphs: N(0, 1) features unless ``xs`` are known, the projected
    adjacency (drawn Bernoulli(0.5) or constant; the paper's plain matrix, or with
    ``symmetric=True`` its upper triangle mirrored) unless ``adjs`` are known. A tensor as
    ``feature_init`` or ``adjacency_init`` is a starting point (the analytic start)."""
    features = free(in_channels, feature_init) if xs is None else known(xs)
    if adjs is not None:
        adjacency = known(adjs)
    else:
        adjacency = projected_adjacency(adjacency_init) if symmetric else full_adjacency(adjacency_init)
    return lambda gen: DummyGraphs(list(node_counts), gen, features=features, adjacency=adjacency)


def glg_objective(distance: Callable[[DummyGraphs], Tensor], alpha: float = 0.0, beta: float = 0.0):
    """Eq. 14: ``distance + sum_i alpha tr(X_i^T L_i X_i) + beta ||A_i||_F^2`` over the dummy graphs."""

    def objective(dummy: DummyGraphs) -> Tensor:
        value = distance(dummy)
        for i in range(len(dummy.node_counts)):
            xs, a = dummy.x(i), dummy.adjacency(i)
            if alpha:
                value = value + alpha * feature_smoothness(xs, a)
            if beta:
                value = value + beta * frobenius(a)
        return value

    return objective


def invert_graphs(model: GraphClassifier, observed: dict[str, Tensor], node_counts: list[int], labels: list[int],
                  ctx: AttackContext, *, xs: list[Tensor] | None = None, adjs: list[Tensor] | None = None,
                  iterations: int = 2000, lr: float = 0.01, alpha: float = 0.0, beta: float = 0.0,
                  adjacency_init: str | float | Tensor = "bernoulli", loss: str = "cross_entropy",
                  restarts: int = 1, symmetric: bool = False) -> list[GraphInversion]:
    """Fit dummy graphs of ``node_counts`` nodes to the observed gradient of a batch with ``labels``
    (one graph: Alg. 3; several: the batched attack of the paper's Tables 8-9); ``xs`` or ``adjs``
    given (Graph-a, Graph-b) stay fixed. ``adjacency_init``: ``bernoulli`` (the paper), a constant
    in [0, 1] (its App. F) or a starting matrix. ``restarts`` > 1 (ours) fits that many draws and
    keeps the one with the lowest objective. The paper's plain matrix is returned symmetrised as
    the edge probabilities."""
    if xs is not None and adjs is not None:
        raise ValueError("nothing to recover: both X and A are known")
    gen = ctx.generator()
    matcher = GradientMatcher(model, observed, distance="cosine", loss=loss)
    targets = torch.tensor(labels)
    fit = minimise(glg_dummy(node_counts, model.convs[0].in_channels, xs=xs, adjs=adjs, adjacency_init=adjacency_init,
                             symmetric=symmetric),
                   glg_objective(lambda d: matcher(*d.dense(), targets), alpha, beta), ctx,
                   Schedule(iterations=iterations, lr=lr, restarts=restarts), gen)
    out = []
    for i, adjacency in enumerate(fit.dummy.adjacencies):
        with torch.no_grad():
            x = fit.dummy.x(i).detach().clone()
            a = adjacency.edge_scores().detach().clone()
        sample = adjacency.sample(gen) if isinstance(adjacency, (ProjectedAdjacency, FullAdjacency)) else a
        out.append(GraphInversion(x=x, adj_prob=a, adj_sample=sample, objective=fit.objective))
    return out


def invert_graph(model: GraphClassifier, observed: dict[str, Tensor], num_nodes: int, label: int,
                 ctx: AttackContext, *, x: Tensor | None = None, adj: Tensor | None = None,
                 **kw) -> GraphInversion:
    """:func:`invert_graphs` for one graph."""
    return invert_graphs(model, observed, [num_nodes], [label], ctx, xs=None if x is None else [x],
                         adjs=None if adj is None else [adj], **kw)[0]


def thresholded(adj: Tensor, tau: float) -> Tensor:
    """App. F's discrete output: the adjacency min-max normalised over its off-diagonal entries,
    an edge wherever it reaches ``tau``."""
    off = ~torch.eye(adj.size(0), dtype=torch.bool)
    low, high = adj[off].min(), adj[off].max()
    scaled = (adj - low) / (high - low) if high > low else torch.zeros_like(adj)
    return ((scaled >= tau) & off).float()
