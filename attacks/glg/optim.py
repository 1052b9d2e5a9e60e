r"""GLG's optimisation attack on a graph-classification gradient (Sinha et al., "Gradient
Inversion Attack on Graph Neural Networks", arXiv:2411.19440, Alg. 3).

Variants by what the attacker knows: Graph-a (X known, A recovered), Graph-b (A known, X
recovered), Graph-c (neither). Only the unknowns are variables. The objective is

.. math::
    \hat D = D_{\cos}\big(\nabla_W L(\hat X, \hat A), \nabla_W L\big)
             + \alpha \, \mathrm{tr}(\hat X^\top L \hat X) + \beta \lVert \hat A \rVert_F^2

(Eq. 14; :math:`\alpha = \beta = 0` is Eq. 12, which the paper uses on molecules), minimised with
Adam; after every step the adjacency is projected onto [0, 1] (Eq. 15). The adjacency is kept
symmetric with a zero diagonal, its strict upper triangle the variable (the paper optimises a
plain matrix; GraphMI's convention). Defaults where the paper is silent: lr 0.01, 2000 iterations,
Bernoulli(0.5) initial adjacency, N(0, 1) features. The output is the final continuous adjacency
(scored by AUC / AP) and a Bernoulli sample of it (scored by accuracy).
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
from attacks.common.parametrisations import ProjectedAdjacency, free, known, projected_adjacency
from attacks.common.regularisers import feature_smoothness, frobenius
from fedgraph_sim.models import GraphClassifier


@dataclass(frozen=True)
class GraphInversion:
    x: Tensor  # [N, D]
    adj_prob: Tensor  # [N, N], symmetric, zero diagonal, in [0, 1]
    adj_sample: Tensor  # a Bernoulli sample of adj_prob (upper triangle, mirrored)
    objective: float


def glg_dummy(n: int, in_channels: int, *, x: Tensor | None = None, adj: Tensor | None = None,
              adjacency_init: str | float = "bernoulli"):
    """The factory of GLG's dummy graph of ``n`` nodes: N(0, 1) features unless ``x`` is known, the
    projected adjacency (drawn Bernoulli(0.5) or constant) unless ``adj`` is known."""
    features = free(in_channels) if x is None else known([x])
    adjacency = projected_adjacency(adjacency_init) if adj is None else known([adj])
    return lambda gen: DummyGraphs([n], gen, features=features, adjacency=adjacency)


def glg_objective(distance: Callable[[Tensor, Tensor], Tensor], alpha: float = 0.0, beta: float = 0.0):
    """Eq. 14: ``distance(X, A) + alpha tr(X^T L X) + beta ||A||_F^2`` of the dummy graph."""

    def objective(dummy: DummyGraphs) -> Tensor:
        xs, a = dummy.x(0), dummy.adjacency(0)
        value = distance(xs, a)
        if alpha:
            value = value + alpha * feature_smoothness(xs, a)
        if beta:
            value = value + beta * frobenius(a)
        return value

    return objective


def invert_graph(model: GraphClassifier, observed: dict[str, Tensor], num_nodes: int, label: int,
                 ctx: AttackContext, *, x: Tensor | None = None, adj: Tensor | None = None,
                 iterations: int = 2000, lr: float = 0.01, alpha: float = 0.0, beta: float = 0.0,
                 adjacency_init: str | float = "bernoulli", loss: str = "cross_entropy") -> GraphInversion:
    """Fit ``num_nodes`` dummy nodes to the observed gradient of one graph with ``label``;
    ``x`` or ``adj`` given (Graph-a, Graph-b) stay fixed. ``adjacency_init``: ``bernoulli`` (the
    paper) or a constant in [0, 1] (its App. F)."""
    if x is not None and adj is not None:
        raise ValueError("nothing to recover: both X and A are known")
    gen = ctx.generator()
    matcher = GradientMatcher(model, observed, distance="cosine", loss=loss)
    labels, mask = torch.tensor([label]), torch.ones(1, num_nodes, dtype=torch.bool)
    fit = minimise(glg_dummy(num_nodes, model.convs[0].in_channels, x=x, adj=adj, adjacency_init=adjacency_init),
                   glg_objective(lambda xs, a: matcher(xs[None], a[None], mask, labels), alpha, beta), ctx,
                   Schedule(iterations=iterations, lr=lr), gen)
    dummy = fit.dummy
    with torch.no_grad():
        xs, a = dummy.x(0).detach().clone(), dummy.adjacency(0).detach().clone()
    adjacency = dummy.adjacencies[0]
    sample = adjacency.sample(gen) if isinstance(adjacency, ProjectedAdjacency) else a
    return GraphInversion(x=xs, adj_prob=a, adj_sample=sample, objective=fit.objective)
