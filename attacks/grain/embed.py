"""Centre states of candidate building blocks, through the attacked model's own layers.

GRAIN (Drencheva et al., ICLR 2025, Thm 5.3): a node's state after ``l`` message-passing layers
depends only on its ``l``-hop computation tree, so a candidate block reproduces the true state of
its centre exactly when the block is right. Blocks are evaluated in batches as "stars": a centre
state and up to ``D`` neighbour states, each looked up in a table of states (layer 1: the
candidate node types' input rows; layer 2: the 1-hop blocks' layer-1 states), so no candidate
graph is ever materialised.

- GCN (Kipf & Welling 2017): ``H_c = act(sum_{j in {c} u N(c)} w_cj lin(H_j) + b)`` with
  ``w_cj = ((deg_c + 1)(deg_j + 1))^-1/2`` and the degrees read from the degree features, never
  from the (truncated) block: PyG's ``gcn_norm`` on a block would count the wrong degrees.
- GAT (Velickovic et al. 2018): attention over the centre's complete neighbourhood (self-loop
  included), heads concatenated or averaged, skip projection and bias, as PyG's ``GATConv`` and
  ``fedgraph_sim.models.convs.dense_gat`` compute it. No degrees needed.
- GIN (Xu et al., ICLR 2019; [ext] ``other_convs``): ``H_c = act(MLP((1 + eps) H_c + sum_j H_j))``,
  the MLP's first linear map applied to the table once (it is linear), the rest per star. No
  degrees needed.
- GraphSAGE, mean aggregation (Hamilton et al. 2017; [ext] ``other_convs``):
  ``H_c = act(W_l mean_j H_j + b + W_r H_c)``. No degrees needed: the mean's count is the star's.

Which weight's gradient spans a layer's input rows (:func:`check_weight`): the input projection of
GCN and GAT (``Z = A_hat (H W^T)``: ``dW = G^T A_hat H``, rows in the span of ``H``'s), the first
linear map of GIN's MLP (``dW = G^T (A + (1 + eps) I) H``) and SAGE's root weight ``W_r``
(``dW_r = G^T H``, no aggregation in the way).
"""

from __future__ import annotations

import torch
from torch import Tensor

from fedgraph_sim.models import GraphClassifier

SUPPORTED = ("gcn", "gat")  # GRAIN's own victims
OTHER_CONVS = ("gin", "sage")  # [ext] other_convs
DEGREE_FREE = ("gat", "gin", "sage")  # a centre's state needs no neighbour's degree


def check_weight(conv: str, k: int) -> str:
    """The name of the weight of layer ``k`` (of type ``conv``) whose gradient's rows span the
    layer's input rows."""
    return {"gin": f"convs.{k}.nn.0.weight", "sage": f"convs.{k}.lin_r.weight"}.get(conv, f"convs.{k}.lin.weight")


def checked_weights(model: GraphClassifier) -> tuple[str, str, str]:
    """The weights of the three span checks: node rows at layer 1; 1-hop states at layer 2, 2-hop
    states at the per-node readout (2 layers) or at layer 3. GIN checks its 1- and 2-hop rows
    inside layers 1 and 2 instead, at the second linear map of their MLPs (:meth:`StarLayer.rows`):
    that map's output gradient mixes each node's own activation masks, so it keeps the rank that a
    pooled model's top layer loses (nodes whose units switch alike share one gradient row there)."""
    if model.conv_name == "gin":
        return check_weight("gin", 0), "convs.0.nn.2.weight", "convs.1.nn.2.weight"
    third = f"{model.first_readout_name}.weight" if len(model.convs) == 2 else check_weight(model.conv_name, 2)
    return check_weight(model.conv_name, 0), check_weight(model.conv_name, 1), third


class StarLayer:
    """Layer ``k`` of ``model`` evaluated at star centres over a table of input states."""

    def __init__(self, model: GraphClassifier, k: int, table: Tensor) -> None:
        self.conv, self.act, self.kind = model.convs[k], model.acts[k], model.conv_name
        self.table = table
        self.bias = getattr(self.conv, "bias", None)  # GIN's and SAGE's biases are inside their maps
        with torch.no_grad():
            if self.kind == "gin":  # the MLP's first map is linear: applied once, to the table
                first = self.conv.nn[0]
                self.proj = table @ first.weight.T
            elif self.kind == "sage":
                self.proj = table @ self.conv.lin_l.weight.T  # its bias is added once per star
                self.root = self.conv.lin_r(table)
            else:
                self.proj = self.conv.lin(table)  # [S, H*C]
            if self.kind == "gat":
                h = self.proj.unflatten(-1, (self.conv.heads, self.conv.out_channels))
                self.heads = h
                self.a_src = (h * self.conv.att_src[0]).sum(-1)  # [S, H]
                self.a_dst = (h * self.conv.att_dst[0]).sum(-1)
                self.res = None if self.conv.res is None else self.conv.res(table)

    @torch.no_grad()
    def __call__(self, centre: Tensor, nbrs: Tensor, mask: Tensor, centre_deg: Tensor | None = None,
                 nbr_deg: Tensor | None = None, chunk: int = 4096) -> Tensor:
        """States of ``centre [B]`` (indices into the table) over neighbours ``nbrs [B, D]``
        (``mask [B, D]`` marks real ones); GCN also needs the degree features."""
        parts = []
        for s in range(0, centre.numel(), chunk):
            sl = slice(s, s + chunk)
            if self.kind == "gcn":
                out = self._gcn(centre[sl], nbrs[sl], mask[sl], centre_deg[sl], nbr_deg[sl])
            elif self.kind == "gin":
                out = self._gin(centre[sl], nbrs[sl], mask[sl])
            elif self.kind == "sage":
                out = self._sage(centre[sl], nbrs[sl], mask[sl])
            else:
                out = self._gat(centre[sl], nbrs[sl], mask[sl])
            if self.bias is not None:
                out = out + self.bias
            parts.append(self.act(out))
        return torch.cat(parts) if parts else self.proj.new_zeros(0, self.proj.size(1))

    def _gcn(self, centre, nbrs, mask, centre_deg, nbr_deg):
        dc = (centre_deg + 1).to(self.proj.dtype)
        w = (dc[:, None] * (nbr_deg + 1).to(self.proj.dtype)).rsqrt() * mask
        return self.proj[centre] / dc[:, None] + (w[..., None] * self.proj[nbrs]).sum(1)

    def _gin(self, centre, nbrs, mask):
        return self.conv.nn[2](self._gin_hidden(centre, nbrs, mask))

    def _gin_hidden(self, centre, nbrs, mask):
        """GIN's MLP hidden layer, ``ReLU(W_1 ((1 + eps) H_c + sum_j H_j) + b_1)``."""
        first = self.conv.nn[0]
        pre = (1 + self.conv.eps) * self.proj[centre] + (mask[..., None] * self.proj[nbrs]).sum(1)
        return self.conv.nn[1](pre if first.bias is None else pre + first.bias)

    @torch.no_grad()
    def rows(self, centre: Tensor, nbrs: Tensor, mask: Tensor, centre_deg: Tensor | None = None,
             nbr_deg: Tensor | None = None) -> Tensor:
        """The rows the span check of this layer's block reads (:func:`checked_weights`): GIN's
        MLP hidden layer, the states themselves for the other layers (checked at the next layer)."""
        if self.kind == "gin":
            return self._gin_hidden(centre, nbrs, mask)
        return self(centre, nbrs, mask, centre_deg, nbr_deg)

    @torch.no_grad()
    def states(self, rows: Tensor) -> Tensor:
        """The states of blocks whose :meth:`rows` are ``rows``."""
        if self.kind == "gin":
            return self.act(self.conv.nn[2](rows))
        return rows

    def _sage(self, centre, nbrs, mask):
        m = mask.to(self.proj.dtype)
        mean = (m[..., None] * self.proj[nbrs]).sum(1) / m.sum(1, keepdim=True).clamp(min=1)
        bias = self.conv.lin_l.bias
        return mean + self.root[centre] + (0 if bias is None else bias)

    def _gat(self, centre, nbrs, mask):
        idx = torch.cat([centre[:, None], nbrs], 1)  # [B, 1 + D]: the self-loop first
        valid = torch.cat([torch.ones_like(mask[:, :1]), mask], 1)
        scores = torch.nn.functional.leaky_relu(self.a_dst[centre][:, None] + self.a_src[idx],
                                                self.conv.negative_slope)  # [B, 1 + D, H]
        scores = scores.masked_fill(~valid[..., None], float("-inf"))
        alpha = torch.softmax(scores, dim=1)
        out = (alpha[..., None] * self.heads[idx]).sum(1)  # [B, H, C]
        out = out.flatten(1) if self.conv.concat else out.mean(1)
        if self.res is not None:
            out = out + self.res[centre]
        return out


def check_input(model: GraphClassifier, x0: Tensor, rows: Tensor) -> Tensor:
    """What the 2-hop span check reads per node, from layer 2's :meth:`StarLayer.rows`: the
    readout's ``[X0 || H_2]`` (or ``H_2``) for 2-layer models, ``H_2`` itself (already activated)
    for deeper ones, GIN's layer-2 MLP hidden rows as they are."""
    if model.conv_name != "gin" and len(model.convs) == 2 and model.readout_input == "concat_input":
        return torch.cat([x0, rows], dim=1)
    return rows
