r"""FedGIG's adjacency-matrix constraining module, AMC (Xiao, Li, Qi, Wang, Li, "FedGIG: Graph
Inversion from Gradient in Federated Learning", arXiv:2412.18513, Sec. III-B, Eqs. 3-7).

From a free matrix :math:`\Theta \in \mathbb{R}^{N \times N}`, at attack step :math:`t`:

.. math::
    S = \tfrac12\big[(\Theta - \mathrm{diag}\,\Theta) + (\Theta - \mathrm{diag}\,\Theta)^\top\big],
    \quad P = \sigma(S),\quad
    A_{tmp} = \mathrm{topk}_{n(t)}(P),\quad A_{bin} = \mathbb{1}[A_{tmp} \ge \beta]

with the per-node budget :math:`n(t) = \max(n_0 - \alpha t, n_{max})` contracting from
:math:`n_0 = N - 1` (Eq. 5). The row-wise top-k mask is symmetrised by union (each strong pair
kept; ``intersection`` caps every degree at n(t) strictly). The diagonal never enters the top-k
and stays 0. Thresholding has no gradient, so the model sees the binary graph through a
straight-through estimator, :math:`A = A_{tmp} + (A_{bin} - A_{tmp})`.detach() (the paper is
silent on how it differentiates; without this the penalty and the matching are dead): backward
flows through the sigmoid into the surviving entries (``ste_scope: masked``) or into all of P
(``full``), so pruned pairs may come back. ``ste: false`` feeds :math:`A_{tmp}` itself and
binarises only the final graph.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from attacks.common.parametrisations import Parametrisation

SYMMETRISATIONS = ("union", "intersection")
STE_SCOPES = ("masked", "full")


def budget(t: int, n: int, n_max: int, alpha: float) -> int:
    """Eq. 5's per-node budget at step ``t``: ``ceil(n0 - alpha t)`` with n0 = N - 1, clipped to
    ``[min(n_max, N - 1), N - 1]``."""
    top = n - 1
    return min(top, max(min(n_max, top), math.ceil(top - alpha * t)))


def constrain(theta: Tensor, t: int, *, n_max: int = 4, alpha: float = 0.15, beta: float = 0.5,
              symmetrise: str = "union", ste_scope: str = "masked", ste: bool = True) -> tuple[Tensor, Tensor]:
    """``(A, P)``: the binary, symmetric, loop-free, degree-capped adjacency the model sees (with
    its straight-through gradient) and the edge probabilities ``P = sigmoid(S)``, zero diagonal.
    ``ste=False`` (an ablation): A is the continuous top-k probabilities ``A_tmp``, binarised by
    the caller after the fit."""
    n = theta.size(0)
    off = ~torch.eye(n, dtype=torch.bool)
    s = theta * off
    s = (s + s.t()) / 2
    p = torch.sigmoid(s) * off
    k = budget(t, n, n_max, alpha)
    ranked = p.masked_fill(~off, -1.0)
    mask = torch.zeros_like(p, dtype=torch.bool).scatter(1, ranked.topk(k, dim=1).indices, True) & off
    mask = mask | mask.t() if symmetrise == "union" else mask & mask.t()
    kept = p * mask
    if not ste:
        return kept, p
    binary = (kept >= beta).to(p.dtype)
    base = kept if ste_scope == "masked" else p
    return base + (binary - base).detach(), p


class ConstrainedAdjacency(Parametrisation):
    """AMC as a dummy adjacency: ``Theta`` ~ N(0, 1) the variable, the binary constrained graph
    its value. The schedule's step counts the optimiser's steps (:meth:`project` is called once
    after each); :meth:`edge_scores` is the sigmoid probability P."""

    def __init__(self, n: int, gen: torch.Generator, **settings) -> None:
        self.theta = torch.randn(n, n, generator=gen).requires_grad_()
        self.variables = [self.theta]
        self.settings, self.step = settings, 0

    def constrained(self) -> tuple[Tensor, Tensor]:
        return constrain(self.theta, self.step, **self.settings)

    def value(self) -> Tensor:
        return self.constrained()[0]

    def edge_scores(self) -> Tensor:
        return self.constrained()[1]

    def project(self) -> None:
        self.step += 1
