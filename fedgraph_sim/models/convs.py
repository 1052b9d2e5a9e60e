"""Message-passing layers with a sparse PyG forward and a dense forward over the same parameters.

The dense forwards take ``x [B, N, F]``, a (possibly soft) adjacency ``adj [B, N, N]`` with zero
diagonal and a node ``mask [B, N]``; on a binary adjacency they equal the PyG layer exactly, and on
a soft one they are the natural weighted generalisation, so attacks can differentiate through a
dummy adjacency.
"""

from __future__ import annotations

from typing import Callable, ClassVar

import torch
from torch import Tensor
from torch_geometric.nn import GATConv, GCNConv, GINConv, SAGEConv

from fedgraph_sim import registry


def with_self_loops(adj: Tensor) -> Tensor:
    """``A * (1 - I) + I``: PyG's ``add_remaining_self_loops`` with fill value 1, densely.

    Args:
        adj (Tensor): the adjacency ``[..., N, N]``.
    """
    eye = torch.eye(adj.size(-1), dtype=adj.dtype, device=adj.device)
    return adj * (1 - eye) + eye


def _plus_bias(out: Tensor, bias: Tensor | None) -> Tensor:
    return out if bias is None else out + bias


def gcn_normalised(adj: Tensor) -> Tensor:
    """``D^-1/2 (A + I) D^-1/2`` of ``[.., N, N]`` (PyG ``GCNConv``'s normalisation, densely).

    Args:
        adj (Tensor): the adjacency ``[..., N, N]``, its diagonal replaced by ones.
    """
    a_hat = with_self_loops(adj)
    d_inv_sqrt = a_hat.sum(-1).clamp(min=1e-12).pow(-0.5)
    return d_inv_sqrt.unsqueeze(-1) * a_hat * d_inv_sqrt.unsqueeze(-2)


def dense_gcn(conv: GCNConv, x: Tensor, adj: Tensor) -> Tensor:
    """Kipf & Welling (2017): ``D^-1/2 (A + I) D^-1/2 X Theta^T + b``.

    Args:
        conv (GCNConv): the layer whose parameters are used.
        x (Tensor): node features ``[B, N, F]``.
        adj (Tensor): the (possibly soft) adjacency ``[B, N, N]``.
    """
    return _plus_bias(gcn_normalised(adj) @ conv.lin(x), conv.bias)


def gat_attention(conv: GATConv, h: Tensor, weights: Tensor) -> Tensor:
    """Attention coefficients ``alpha [B, H, N, N]`` of projected features ``h [B, N, H, C]``
    over the neighbourhoods ``weights [B, N, N]`` (self-loops included, 0 = no edge; a soft
    weight scales the edge's share). Rows without any neighbour get all-zero coefficients.

    Args:
        conv (GATConv): the layer (its attention vectors and slope).
        h (Tensor): projected features ``[B, N, H, C]``.
        weights (Tensor): the neighbourhoods ``[B, N, N]``, row ``i`` over node ``i``'s sources.
    """
    a_src = (h * conv.att_src.unsqueeze(0)).sum(-1).transpose(1, 2)  # [B, H, N]
    a_dst = (h * conv.att_dst.unsqueeze(0)).sum(-1).transpose(1, 2)
    scores = torch.nn.functional.leaky_relu(a_dst.unsqueeze(-1) + a_src.unsqueeze(-2), conv.negative_slope)
    w = weights.unsqueeze(1)
    scores = scores.masked_fill(w <= 0, float("-inf"))
    scores = scores - scores.amax(dim=-1, keepdim=True).detach().nan_to_num(neginf=0.0)
    alpha = w * scores.exp()
    return alpha / alpha.sum(-1, keepdim=True).clamp(min=1e-30)


def gat_combine(conv: GATConv, alpha: Tensor, h: Tensor, x: Tensor) -> Tensor:
    """``sum_j alpha_ij h_j`` per head, heads concatenated or averaged, plus the skip projection
    of ``x`` (``residual=True``) and the bias.

    Args:
        conv (GATConv): the layer.
        alpha (Tensor): attention coefficients ``[B, H, N, N]``.
        h (Tensor): projected features ``[B, N, H, C]``.
        x (Tensor): the layer's input ``[B, N, F]``, for the skip projection.

    Returns:
        ``[B, N, H * C]`` (``concat``) or ``[B, N, C]``.
    """
    out = (alpha @ h.transpose(1, 2)).transpose(1, 2)  # [B, N, H, C]
    out = out.flatten(-2) if conv.concat else out.mean(-2)
    if conv.res is not None:
        out = out + conv.res(x)
    return _plus_bias(out, conv.bias)


def dense_gat(conv: GATConv, x: Tensor, adj: Tensor) -> Tensor:
    """Velickovic et al. (2018): per head ``alpha_ij ~ A_ij exp(LeakyReLU(a_dst.h_i + a_src.h_j))``
    over ``A + I``, then ``sum_j alpha_ij h_j``; heads concatenated (``concat``) or averaged, plus
    an optional skip projection and the bias (PyG's ``GATConv``).

    Args:
        conv (GATConv): the layer whose parameters are used.
        x (Tensor): node features ``[B, N, F]``.
        adj (Tensor): the (possibly soft) adjacency ``[B, N, N]``.
    """
    h = conv.lin(x).unflatten(-1, (conv.heads, conv.out_channels))  # [B, N, H, C]
    return gat_combine(conv, gat_attention(conv, h, with_self_loops(adj)), h, x)


def dense_sage(conv: SAGEConv, x: Tensor, adj: Tensor) -> Tensor:
    """Hamilton et al. (2017), mean aggregator: ``W_l mean_{j in N(i)} x_j + b + W_r x_i``. On a
    soft adjacency the mean is weighted, ``sum_j A_ij x_j / sum_j A_ij`` (PyG's ``DenseSAGEConv``
    clamps the degree at 1 instead, which is the same on binary graphs only); a node without
    neighbours aggregates zero either way.

    Args:
        conv (SAGEConv): the layer whose parameters are used.
        x (Tensor): node features ``[B, N, F]``.
        adj (Tensor): the (possibly soft) adjacency ``[B, N, N]``.
    """
    neighbours = adj @ x / adj.sum(-1, keepdim=True).clamp(min=1e-8)
    return conv.lin_l(neighbours) + conv.lin_r(x)


def dense_gin(conv: GINConv, x: Tensor, adj: Tensor) -> Tensor:
    """Xu et al. (2019): ``MLP((1 + eps) x_i + sum_{j in N(i)} x_j)``, sum aggregation without any
    degree normalisation (PyG's ``GINConv``); a soft adjacency weights each neighbour's term.

    Args:
        conv (GINConv): the layer whose parameters are used.
        x (Tensor): node features ``[B, N, F]``.
        adj (Tensor): the (possibly soft) adjacency ``[B, N, N]``.
    """
    return conv.nn((1 + conv.eps) * x + adj @ x)


class ConvType:
    """A message-passing layer type, registered as ``model.conv: <name>``: ``build(in, out, bias=,
    heads=, concat=, residual=)`` makes one layer (``heads``, ``concat`` and ``residual`` apply to
    attention layers only, ``multi_head``) and ``dense(layer, x, adj)`` is its dense forward.
    No caching, no dropout, no "improved" normalisation: attacks mirror the model exactly."""

    name: ClassVar[str]
    multi_head: ClassVar[bool] = False
    dense: ClassVar[Callable[[torch.nn.Module, Tensor, Tensor], Tensor]]

    @staticmethod
    def build(i: int, o: int, *, bias: bool, heads: int, concat: bool, residual: bool,
              train_eps: bool = False) -> torch.nn.Module:
        """One layer of this type.

        Args:
            i (int): input width.
            o (int): output width (per head for attention layers).
            bias (bool): whether the layer has biases.
            heads (int): attention heads (attention layers only).
            concat (bool): concatenate the heads rather than average them (attention layers only).
            residual (bool): add a skip projection (attention layers only).
            train_eps (bool, optional): GIN's ``eps`` trained (GIN only). (default: :obj:`False`)
        """
        raise NotImplementedError


@registry.models.register
class GCN(ConvType):
    name = "gcn"
    dense = staticmethod(dense_gcn)

    @staticmethod
    def build(i, o, *, bias, heads, concat, residual, train_eps=False):
        """PyG's ``GCNConv`` (the attention and GIN arguments unused)."""
        return GCNConv(i, o, bias=bias)


@registry.models.register
class GAT(ConvType):
    name = "gat"
    multi_head = True
    dense = staticmethod(dense_gat)

    @staticmethod
    def build(i, o, *, bias, heads, concat, residual, train_eps=False):
        """PyG's ``GATConv`` (``train_eps`` unused)."""
        return GATConv(i, o, heads=heads, concat=concat, bias=bias, residual=residual)


@registry.models.register
class SAGE(ConvType):
    name = "sage"
    dense = staticmethod(dense_sage)

    @staticmethod
    def build(i, o, *, bias, heads, concat, residual, train_eps=False):
        """PyG's ``SAGEConv`` with mean aggregation (the attention and GIN arguments unused)."""
        return SAGEConv(i, o, aggr="mean", bias=bias)


@registry.models.register
class GIN(ConvType):
    """PyG's ``GINConv`` over a 2-layer MLP of width ``o`` (``Linear, ReLU, Linear``; no batch
    norm, so a node's state depends on its computation tree alone), ``eps`` fixed at 0 or trained."""

    name = "gin"
    dense = staticmethod(dense_gin)

    @staticmethod
    def build(i, o, *, bias, heads, concat, residual, train_eps=False):
        """PyG's ``GINConv`` over ``Linear(i, o), ReLU, Linear(o, o)``; a fixed ``eps`` is a
        non-persistent buffer, not a parameter (the attention arguments unused)."""
        mlp = torch.nn.Sequential(torch.nn.Linear(i, o, bias=bias), torch.nn.ReLU(), torch.nn.Linear(o, o, bias=bias))
        conv = GINConv(mlp, train_eps=train_eps)
        if not train_eps:  # a constant, not a weight the federation exchanges
            eps = conv.eps
            del conv.eps
            conv.register_buffer("eps", eps, persistent=False)
        return conv
