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
"""

from __future__ import annotations

import torch
from torch import Tensor

from fedgraph_sim.models import GraphClassifier

SUPPORTED = ("gcn", "gat")


class StarLayer:
    """Layer ``k`` of ``model`` evaluated at star centres over a table of input states."""

    def __init__(self, model: GraphClassifier, k: int, table: Tensor) -> None:
        self.conv, self.act, self.kind = model.convs[k], model.acts[k], model.conv_name
        self.table = table
        with torch.no_grad():
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
            else:
                out = self._gat(centre[sl], nbrs[sl], mask[sl])
            if self.conv.bias is not None:
                out = out + self.conv.bias
            parts.append(self.act(out))
        return torch.cat(parts) if parts else self.proj.new_zeros(0, self.proj.size(1))

    def _gcn(self, centre, nbrs, mask, centre_deg, nbr_deg):
        dc = (centre_deg + 1).to(self.proj.dtype)
        w = (dc[:, None] * (nbr_deg + 1).to(self.proj.dtype)).rsqrt() * mask
        return self.proj[centre] / dc[:, None] + (w[..., None] * self.proj[nbrs]).sum(1)

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


def check_input(model: GraphClassifier, x0: Tensor, state: Tensor) -> Tensor:
    """What the layer after the 2-hop state sees per node: the readout's ``[X0 || H_2]`` (or
    ``H_2``) for 2-layer models, ``H_2`` itself (already activated) for deeper ones."""
    if len(model.convs) == 2 and model.readout_input == "concat_input":
        return torch.cat([x0, state], dim=1)
    return state
