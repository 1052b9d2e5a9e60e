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
from attacks.common.dummy import mirrored, project_unit_interval
from attacks.common.matching import GradientMatcher
from attacks.common.optimize import adam
from attacks.common.regularisers import feature_smoothness, frobenius
from fedgraph_sim.models import GraphClassifier


@dataclass(frozen=True)
class GraphInversion:
    x: Tensor  # [N, D]
    adj_prob: Tensor  # [N, N], symmetric, zero diagonal, in [0, 1]
    adj_sample: Tensor  # a Bernoulli sample of adj_prob (upper triangle, mirrored)
    objective: float


def fit_unknowns(n: int, in_channels: int, distance: Callable[[Tensor, Tensor], Tensor], ctx: AttackContext,
                 gen: torch.Generator, *, x: Tensor | None = None, adj: Tensor | None = None, iterations: int = 2000,
                 lr: float = 0.01, alpha: float = 0.0, beta: float = 0.0,
                 adjacency_init: str | float = "bernoulli") -> tuple[Tensor, Tensor, Tensor | None, float]:
    """GLG's optimisation (Eqs. 12-15), shared by its graph and node attackers: the unknowns of
    ``n`` dummy nodes (N(0, 1) features unless ``x`` is given; the adjacency's upper triangle, drawn
    Bernoulli(0.5) or constant, unless ``adj`` is given) fitted with Adam to ``distance(x, adj)``
    plus the regularisers, the adjacency projected onto [0, 1] after every step. Returns the final
    features, adjacency, upper-triangle variable (None when ``adj`` was given) and best objective."""
    variables: list[Tensor] = []
    if x is None:
        x_var = torch.randn(n, in_channels, generator=gen).requires_grad_()
        variables.append(x_var)
    upper = None
    if adj is None:
        pairs = n * (n - 1) // 2
        if adjacency_init == "bernoulli":
            upper = torch.bernoulli(torch.full((pairs,), 0.5), generator=gen)
        else:
            upper = torch.full((pairs,), float(adjacency_init))
        upper.requires_grad_()
        variables.append(upper)

    def current() -> tuple[Tensor, Tensor]:
        return (x if x is not None else x_var), (adj if adj is not None else mirrored(upper, n))

    def objective() -> Tensor:
        xs, a = current()
        value = distance(xs, a)
        if alpha:
            value = value + alpha * feature_smoothness(xs, a)
        if beta:
            value = value + beta * frobenius(a)
        return value

    project = (lambda: project_unit_interval(upper)) if upper is not None else None
    best = adam(variables, objective, ctx, iterations=iterations, lr=lr, project=project)
    with torch.no_grad():
        xs, a = current()
        return xs.detach().clone(), a.detach().clone(), upper, best


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
    n = num_nodes
    matcher = GradientMatcher(model, observed, distance="cosine", loss=loss)
    labels, mask = torch.tensor([label]), torch.ones(1, n, dtype=torch.bool)
    xs, a, upper, best = fit_unknowns(
        n, model.convs[0].in_channels, lambda xs, a: matcher(xs.unsqueeze(0), a.unsqueeze(0), mask, labels), ctx, gen,
        x=x, adj=adj, iterations=iterations, lr=lr, alpha=alpha, beta=beta, adjacency_init=adjacency_init)
    with torch.no_grad():
        sample = a if upper is None else mirrored(torch.bernoulli(upper.detach().clamp(0, 1), generator=gen), n)
    return GraphInversion(x=xs, adj_prob=a, adj_sample=sample, objective=best)
