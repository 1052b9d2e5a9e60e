r"""GLG's closed-form results (Sinha et al., "Gradient Inversion Attack on Graph Neural Networks",
arXiv:2411.19440, Sec. 4 and App. C-E).

A message-passing layer's pre-activation for node :math:`v` is
:math:`\tilde h_v = x_{agg,v} W^\top + b` (GCN: :math:`x_{agg} = \tilde A X` with
:math:`\tilde A = D^{-1/2}(A+I)D^{-1/2}`; GraphSAGE-mean: neighbour weight :math:`W_1` on
:math:`\tilde A X`, :math:`\tilde A = D^{-1}A`, plus root weight :math:`W_2` on :math:`x_v`).
Weights are laid out as torch's ``[out, in]``.

- Prop. 1: if the loss reaches the layer through node :math:`v`'s row only,
  :math:`\nabla_{W_i} L = \nabla_{b_i} L \, x_{agg,v}`, so :math:`x_{agg,v} = \nabla_{W_i} L / \nabla_{b_i} L`.
- Prop. 2 (SAGE): likewise :math:`x_v = \nabla_{(W_2)_i} L / \nabla_{b_i} L` from the root weight.
- Prop. 3 (GCN, Node-2a, X known): :math:`\tilde A = X_{agg} X^+` (X of full row rank, N <= D).
- Prop. 4 (GCN, Node-2b, A known): :math:`X = \tilde A^+ X_{agg}` (:math:`\tilde A` of full column rank).
- Prop. 5 (SAGE, Node-2c): X by Prop. 2 and :math:`X_{agg}` by Prop. 1, node by node, then
  :math:`\tilde A = X_{agg} X^+` (which also needs X of full row rank; the paper omits it).
- Prop. 6 (SAGE, Graph-a, X known): with :math:`G = \partial L / \partial \tilde H` of the first
  layer, :math:`\nabla W_1 = G^\top \tilde A X` and :math:`\nabla W_2 = G^\top X`, so
  :math:`\tilde A = X (\nabla W_2)^+ \nabla W_1 X^+` when X has full row rank (N <= D) and G full
  row rank (N <= F, every node's gradient non-zero; the paper omits this second condition).

Exactness: Props. 1-5 are exact only where the layer's output reaches the loss through one node's
row: a one-layer model, or the last layer. In the first layer of a two-layer node classifier
:math:`\nabla W = \sum_{u \in N(v) \cup \{v\}} \delta_u \otimes x_{agg,u}` mixes the neighbours,
so the ratio differs from row to row. Prop. 6 is exact at any depth. Every estimate here therefore
comes with its residual from the rank-one form it assumes, and :func:`rank_conditions` reports the
rank conditions the attacker can check from what it knows.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass(frozen=True)
class RowRatio:
    """``value``: the least-squares ``x`` in ``grad_w = grad_b (outer) x``; ``residual``: the
    relative Frobenius error of that rank-one form (0: the proposition holds exactly)."""

    value: Tensor
    residual: float


def row_ratio(grad_w: Tensor, grad_b: Tensor) -> RowRatio:
    """Props. 1 and 2: ``x = grad_W_i / grad_b_i``, over all rows at once in the least-squares
    sense (``sum_i grad_b_i grad_W_i / sum_i grad_b_i^2``), so rows with a tiny bias gradient do
    not blow up the estimate."""
    weight = grad_b @ grad_b
    if weight <= 0:
        raise ValueError("the bias gradient is zero: the layer's rows carry no ratio")
    x = grad_b @ grad_w / weight
    residual = torch.linalg.norm(grad_w - torch.outer(grad_b, x)) / torch.linalg.norm(grad_w).clamp(min=1e-300)
    return RowRatio(x, float(residual))


def adjacency_from_aggregates(aggregates: Tensor, x: Tensor) -> Tensor:
    """Props. 3 and 5: ``A_tilde = X_agg X^+`` (rows: nodes)."""
    return aggregates @ torch.linalg.pinv(x)


def features_from_aggregates(a_tilde: Tensor, aggregates: Tensor) -> Tensor:
    """Prop. 4: ``X = A_tilde^+ X_agg``."""
    return torch.linalg.pinv(a_tilde) @ aggregates


def sage_graph_adjacency(x: Tensor, grad_neighbour: Tensor, grad_root: Tensor) -> Tensor:
    """Prop. 6: ``A_tilde = X (grad W_2)^+ (grad W_1) X^+`` from the first SAGE layer's neighbour
    (``W_1``) and root (``W_2``) weight gradients, both ``[F, D]``."""
    return x @ torch.linalg.pinv(grad_root) @ grad_neighbour @ torch.linalg.pinv(x)


def edges(a_tilde: Tensor, relative_eps: float = 1e-3) -> Tensor:
    """A binary symmetric adjacency from a recovered normalised one: an edge where an off-diagonal
    entry (either direction) exceeds ``relative_eps * max|A_tilde|`` (GCN's self-loops and SAGE's
    row normalisation both leave the off-diagonal support of A)."""
    n = a_tilde.size(0)
    off = a_tilde.masked_fill(torch.eye(n, dtype=torch.bool), 0)
    support = off > relative_eps * a_tilde.abs().max()
    return (support | support.t()).to(a_tilde.dtype)


def rank_conditions(x: Tensor | None = None, grad_root: Tensor | None = None,
                    a_tilde: Tensor | None = None) -> dict[str, int | bool]:
    """What the attacker can check, from what it knows, before trusting the propositions: the rank
    of a known X (Props. 3, 5, 6 need full row rank, so N <= D); given the first SAGE layer's
    root-weight gradient ``G^T X``, whether G has full row rank too (``rank(G^T X) = N`` when X
    has; Prop. 6); the rank of a known ``A_tilde`` (Prop. 4 needs full column rank; ``A + I`` of a
    small random graph is singular surprisingly often)."""
    out: dict[str, int | bool] = {}
    if x is not None:
        n, d = x.shape
        rank_x = int(torch.linalg.matrix_rank(x))
        out.update(nodes=n, feature_dim=d, rank_x=rank_x, x_full_row_rank=rank_x == n)
        if grad_root is not None:
            rank_g = int(torch.linalg.matrix_rank(grad_root))
            out.update(rank_grad_root=rank_g, gradient_full_row_rank=rank_x == n and rank_g == n)
    if a_tilde is not None:
        rank_a = int(torch.linalg.matrix_rank(a_tilde))
        out.update(rank_a=rank_a, a_full_column_rank=rank_a == a_tilde.size(1))
    return out
