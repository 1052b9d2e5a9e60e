"""GNFR: Graph Node Features Recovery (GraphDLG Sec. 4.3, Theorem 2, Algorithm 1).

For GCN layers ``Z_k = A_norm H_{k-1} Theta_k^T + b_k``, ``H_k = ReLU(Z_k)`` and
``r_k = A_norm (G_k * S_k)`` with ``G_k = dL/dH_k`` and ``S_k = ReLU'(Z_k)``:

    grad Theta_k = r_k^T H_{k-1}        and        G_{k-1} = r_k Theta_k.

Given the structure, the recursion starts from ``G_L = m 1_n (W_fc^T g)^T`` (m = 1/n for mean
pooling, 1 for sum) with the unknown last mask ``S_L`` set to all ones (the paper, App. A.1), and
solves ``r_k^T H_{k-1} = grad Theta_k`` for ``H_{k-1}`` layer by layer down to ``X = H_0``; each
solved ``H_{k-1}`` gives the next mask ``S_{k-1} = 1[H_{k-1} > 0]``.

Each solve is a multi-right-hand-side least-squares problem, done directly with float64
``torch.linalg.lstsq`` (gelsd: the min-norm solution when ``r_k`` is rank deficient), never by
forming the paper's Kronecker system ``(r_k^T kron I) vec(H) = vec(grad Theta_k)``.

Identifiability: the solution is unique only if ``rank(r_k) = n``, hence ``n <= d_k``. With the
all-ones start ``r_L`` has rank one, so the recovered features are rank one: every node gets the
same argmax type (Wei et al. 2026, GraphDLG). That is the paper's method, reproduced faithfully.
"""

from __future__ import annotations

from typing import Sequence

import torch
from torch import Tensor

from fedgraph_sim.models.convs import gcn_normalised


def solve_layer(r: Tensor, grad_theta: Tensor, rcond: float | None = None) -> Tensor:
    """The min-norm ``H`` with ``r^T H = grad_theta`` (``r [n, d_k]``, ``grad_theta [d_k, d_{k-1}]``)."""
    return torch.linalg.lstsq(r.t(), grad_theta, rcond=rcond, driver="gelsd").solution


def kron_solve(r: Tensor, grad_theta: Tensor) -> Tensor:
    """The paper's Kronecker form, for tests only: ``(r^T kron I) vec_row(H) = vec_row(grad)``."""
    n, width = r.size(0), grad_theta.size(1)
    system = torch.kron(r.t().contiguous(), torch.eye(width, dtype=r.dtype))
    solution = torch.linalg.lstsq(system, grad_theta.reshape(-1, 1), driver="gelsd").solution
    return solution.reshape(n, width)


def gnfr(thetas: Sequence[Tensor], theta_grads: Sequence[Tensor], w_fc: Tensor, g: Tensor,
         adj: Tensor, pool: str = "mean", masks: Sequence[Tensor] | None = None) -> Tensor:
    """Recover ``X [n, d_0]`` (float64).

    ``thetas[k]``/``theta_grads[k]``: layer k+1's ``lin.weight`` and its gradient; ``w_fc [C, d_L]``
    and ``g = grad b_fc [C]``; ``adj`` the binary structure ``[n, n]``. ``masks`` (oracle ReLU masks
    ``S_1..S_L``, for tests) replaces the all-ones start and the derived masks.
    """
    dt = torch.float64
    a_norm = gcn_normalised(adj.to(dt))
    n = a_norm.size(0)
    m = 1.0 / n if pool == "mean" else 1.0
    grad_h = m * torch.ones(n, 1, dtype=dt) @ (w_fc.to(dt).t() @ g.to(dt)).view(1, -1)
    mask = masks[-1].to(dt) if masks is not None else torch.ones_like(grad_h)
    h = None
    for k in range(len(thetas) - 1, -1, -1):
        r = a_norm @ (grad_h * mask)
        h = solve_layer(r, theta_grads[k].to(dt))
        if k > 0:
            mask = masks[k - 1].to(dt) if masks is not None else (h > 0).to(dt)
            grad_h = r @ thetas[k].to(dt)
    return h
