r"""Priors on a dummy graph, added to the gradient distance.

- :func:`feature_smoothness`: :math:`\mathrm{tr}(X^\top L X)` with the normalised Laplacian
  :math:`L = I - D^{-1/2} A D^{-1/2}` of the (soft) adjacency, degrees plus 1e-3 so isolated nodes
  stay finite; equal to :math:`\tfrac12 \sum_{ij} A_{ij} \lVert x_i/\sqrt{d_i} - x_j/\sqrt{d_j}\rVert^2`
  (GLG, Sinha et al., arXiv:2411.19440, Eq. 13, with its transposition typo and missing square
  fixed; the 1e-3 follows GraphMI, Zhang et al., IJCAI 2021).
- :func:`frobenius`: :math:`\lVert A \rVert_F^2`, GLG's sparsity term (Eq. 14).
"""

from __future__ import annotations

import torch
from torch import Tensor

DEGREE_EPS = 1e-3


def feature_smoothness(x: Tensor, adj: Tensor) -> Tensor:
    d_inv_sqrt = (adj.sum(-1) + DEGREE_EPS).pow(-0.5)
    normalised = d_inv_sqrt.unsqueeze(-1) * adj * d_inv_sqrt.unsqueeze(-2)
    laplacian = torch.eye(adj.size(-1), dtype=adj.dtype) - normalised
    return torch.einsum("nf,nm,mf->", x, laplacian, x)


def frobenius(adj: Tensor) -> Tensor:
    return (adj * adj).sum()
