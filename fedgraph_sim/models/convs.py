"""Message-passing layers with a sparse PyG forward and a dense forward over the same parameters.

The dense forwards take ``x [B, N, F]``, a (possibly soft) adjacency ``adj [B, N, N]`` with zero
diagonal and a node ``mask [B, N]``; on a binary adjacency they equal the PyG layer exactly, and on
a soft one they are the natural weighted generalisation, so attacks can differentiate through a
dummy adjacency.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
from torch import Tensor
from torch_geometric.nn import GATConv, GCNConv, SAGEConv

from fedgraph_sim import registry


def with_self_loops(adj: Tensor) -> Tensor:
    """``A * (1 - I) + I``: PyG's ``add_remaining_self_loops`` with fill value 1, densely."""
    eye = torch.eye(adj.size(-1), dtype=adj.dtype, device=adj.device)
    return adj * (1 - eye) + eye


def dense_gcn(conv: GCNConv, x: Tensor, adj: Tensor) -> Tensor:
    """Kipf & Welling (2017): ``D^-1/2 (A + I) D^-1/2 X Theta^T + b``."""
    a_hat = with_self_loops(adj)
    d_inv_sqrt = a_hat.sum(-1).clamp(min=1e-12).pow(-0.5)
    a_norm = d_inv_sqrt.unsqueeze(-1) * a_hat * d_inv_sqrt.unsqueeze(-2)
    return a_norm @ conv.lin(x) + conv.bias


def dense_gat(conv: GATConv, x: Tensor, adj: Tensor) -> Tensor:
    """Velickovic et al. (2018), one head: ``alpha_ij ~ A_ij exp(LeakyReLU(a_dst.h_i + a_src.h_j))``
    over ``A + I``, then ``sum_j alpha_ij h_j + b``."""
    h = conv.lin(x)  # [B, N, C]
    a_src = (h * conv.att_src.view(1, 1, -1)).sum(-1)
    a_dst = (h * conv.att_dst.view(1, 1, -1)).sum(-1)
    scores = torch.nn.functional.leaky_relu(
        a_dst.unsqueeze(-1) + a_src.unsqueeze(-2), conv.negative_slope)
    weights = with_self_loops(adj)
    scores = scores.masked_fill(weights <= 0, float("-inf"))
    scores = scores - scores.amax(dim=-1, keepdim=True).detach()
    alpha = weights * scores.exp()
    alpha = alpha / alpha.sum(-1, keepdim=True)
    return alpha @ h + conv.bias


def dense_sage(conv: SAGEConv, x: Tensor, adj: Tensor) -> Tensor:
    """Hamilton et al. (2017), mean aggregator: ``W_l mean_{j in N(i)} x_j + b + W_r x_i``."""
    neighbours = adj @ x / adj.sum(-1, keepdim=True).clamp(min=1)
    return conv.lin_l(neighbours) + conv.lin_r(x)


@dataclass(frozen=True)
class ConvType:
    """How to build one layer, and its dense forward."""

    build: Callable[[int, int], torch.nn.Module]
    dense: Callable[[torch.nn.Module, Tensor, Tensor], Tensor]


# No caching, no dropout, no "improved" normalisation: attacks mirror the model exactly.
registry.models.add("gcn", ConvType(lambda i, o: GCNConv(i, o), dense_gcn))
registry.models.add("gat", ConvType(lambda i, o: GATConv(i, o, heads=1), dense_gat))
registry.models.add("sage", ConvType(lambda i, o: SAGEConv(i, o, aggr="mean"), dense_sage))
