"""The federated model: a GNN graph classifier with a sparse and a dense forward."""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch_geometric.nn import global_add_pool, global_max_pool, global_mean_pool
from torch_geometric.utils import to_dense_adj, to_dense_batch

from fedgraph_sim import registry
from fedgraph_sim.errors import require

POOLS = ("sum", "mean", "max")
READOUTS = ("linear", "mlp")
PLACEMENTS = ("after_pool", "per_node")
_SPARSE_POOL = {"sum": global_add_pool, "mean": global_mean_pool, "max": global_max_pool}


def dense_pool(h: Tensor, mask: Tensor, pool: str) -> Tensor:
    """Pool ``h [B, N, C]`` over the real nodes of ``mask [B, N]``."""
    m = mask.unsqueeze(-1).to(h.dtype)
    if pool == "sum":
        return (h * m).sum(1)
    if pool == "mean":
        return (h * m).sum(1) / m.sum(1).clamp(min=1)
    return h.masked_fill(~mask.unsqueeze(-1), float("-inf")).amax(1)


class GraphClassifier(nn.Module):
    r"""``layers`` message-passing layers with ReLU after each (including the last), a pooling
    readout and a classifier, as in GraphDLG (Wei et al. 2026, Sec. 3) by default:

    .. math::
        H_k = \mathrm{ReLU}(\mathrm{conv}_k(H_{k-1}, A)),\quad
        h_G = \mathrm{pool}(H_L),\quad \mathrm{logits} = W_{fc} h_G + b_{fc}.

    ``readout_placement="per_node"`` applies the classifier to every node and pools the logits
    (the GRAIN architecture, Drencheva et al. 2025). ``readout="mlp"`` inserts one hidden ReLU
    layer of width ``hidden``. No dropout or batch norm: the attacker's forward is deterministic.

    ``forward`` is the sparse PyG path used for training; ``forward_dense`` evaluates the same
    parameters on padded dense inputs so attacks can differentiate through a soft adjacency and
    DP-SGD can take per-graph gradients with ``torch.func.vmap``.
    """

    def __init__(self, in_channels: int, num_classes: int, *, conv: str = "gcn",
                 layers: int = 2, hidden: int = 16, pool: str = "mean",
                 readout: str = "linear", readout_placement: str = "after_pool") -> None:
        super().__init__()
        conv_type = registry.models.get(conv)
        require(layers >= 1, "model.layers", f"must be >= 1 (got {layers})")
        require(hidden >= 1, "model.hidden", f"must be >= 1 (got {hidden})")
        require(in_channels >= 1, "model.in_channels", f"must be >= 1 (got {in_channels})")
        require(num_classes >= 2, "model.num_classes", f"must be >= 2 (got {num_classes})")
        require(pool in POOLS, "model.pool", f"unknown pool '{pool}'; valid: {', '.join(POOLS)}")
        require(readout in READOUTS, "model.readout",
                f"unknown readout '{readout}'; valid: {', '.join(READOUTS)}")
        require(readout_placement in PLACEMENTS, "model.readout_placement",
                f"unknown placement '{readout_placement}'; valid: {', '.join(PLACEMENTS)}")
        self.conv_name, self.pool, self.readout_placement = conv, pool, readout_placement
        self._dense_conv = conv_type.dense
        dims = [in_channels] + [hidden] * layers
        self.convs = nn.ModuleList(conv_type.build(i, o) for i, o in zip(dims[:-1], dims[1:]))
        # One ReLU module per layer so defenses can hook layer outputs (DP-Activations).
        self.acts = nn.ModuleList(nn.ReLU() for _ in range(layers))
        if readout == "linear":
            self.classifier = nn.Linear(hidden, num_classes)
        else:
            self.classifier = nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(),
                                            nn.Linear(hidden, num_classes))

    @property
    def final_linear(self) -> nn.Linear:
        """The last linear layer, whose gradient reveals the pooled embedding."""
        return self.classifier if isinstance(self.classifier, nn.Linear) else self.classifier[-1]

    @property
    def final_linear_name(self) -> str:
        """Parameter-name prefix of :attr:`final_linear` (``classifier`` or ``classifier.2``)."""
        if isinstance(self.classifier, nn.Linear):
            return "classifier"
        return f"classifier.{len(self.classifier) - 1}"

    def node_embeddings(self, x: Tensor, edge_index: Tensor) -> Tensor:
        for conv, act in zip(self.convs, self.acts):
            x = act(conv(x, edge_index))
        return x

    def graph_embedding(self, x: Tensor, edge_index: Tensor, batch: Tensor) -> Tensor:
        """The pooled output of the message-passing layers, ``h_G`` (GraphDLG's encoder)."""
        return _SPARSE_POOL[self.pool](self.node_embeddings(x, edge_index), batch)

    def forward(self, x: Tensor, edge_index: Tensor, batch: Tensor | None = None) -> Tensor:
        if batch is None:
            batch = x.new_zeros(x.size(0), dtype=torch.long)
        if self.readout_placement == "per_node":
            return _SPARSE_POOL[self.pool](self.classifier(self.node_embeddings(x, edge_index)), batch)
        return self.classifier(self.graph_embedding(x, edge_index, batch))

    def dense_node_embeddings(self, x: Tensor, adj: Tensor, mask: Tensor) -> Tensor:
        m = mask.unsqueeze(-1).to(x.dtype)
        for conv, act in zip(self.convs, self.acts):
            x = act(self._dense_conv(conv, x, adj)) * m
        return x

    def forward_dense(self, x: Tensor, adj: Tensor, mask: Tensor | None = None) -> Tensor:
        """Logits for ``x [B, N, F]`` (or ``[N, F]``), ``adj [B, N, N]``, ``mask [B, N]``."""
        if x.dim() == 2:
            x, adj = x.unsqueeze(0), adj.unsqueeze(0)
            mask = None if mask is None else mask.unsqueeze(0)
        if mask is None:
            mask = torch.ones(x.shape[:2], dtype=torch.bool, device=x.device)
        h = self.dense_node_embeddings(x, adj, mask)
        if self.readout_placement == "per_node":
            return dense_pool(self.classifier(h), mask, self.pool)
        return self.classifier(dense_pool(h, mask, self.pool))


def to_dense(batch) -> tuple[Tensor, Tensor, Tensor]:
    """``(x [B, N, F], adj [B, N, N], mask [B, N])`` for a PyG ``Batch`` (or single ``Data``)."""
    index = getattr(batch, "batch", None)
    if index is None:
        index = batch.x.new_zeros(batch.num_nodes, dtype=torch.long)
    x, mask = to_dense_batch(batch.x, index)
    adj = to_dense_adj(batch.edge_index, index, max_num_nodes=x.size(1))
    return x, adj, mask
