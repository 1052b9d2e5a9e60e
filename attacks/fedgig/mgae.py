r"""FedGIG's subgraph reconstruction module, SR: a masked graph auto-encoder trained on the
attacker's auxiliary graphs (Xiao et al., arXiv:2412.18513, Sec. III-C, Eqs. 8-10).

Training: each graph's undirected edges are dropped at random (``mask_ratio``, both directions
together), a two-layer GCN encodes the masked graph and its features,
:math:`Z = \hat A\,\mathrm{ReLU}(\hat A X W_1) W_2` with :math:`\hat A = D^{-1/2}(A + I)D^{-1/2}`,
and the inner-product decoder :math:`\sigma(Z Z^\top)` is fitted to the *full* adjacency by mean
squared error (Eq. 10) over the off-diagonal entries (the decoder's diagonal
:math:`\sigma(\lVert z_i \rVert^2) \ge 0.5` can never meet a zero diagonal, so it is left out).
At attack time the AMC's binary graph and the features go in and :math:`\sigma(ZZ^\top)`, diagonal
zeroed, comes out: the common motifs (rings, chains) the gradient matching missed, completed.
Widths 64 and 32, Adam lr 0.01, 200 epochs of mini-batches of 32 graphs, mask ratio 0.5: the
paper gives none of them.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from attacks.common.aux import aux_batches
from fedgraph_sim.models.convs import gcn_normalised


class MaskedGAE(nn.Module):
    def __init__(self, in_channels: int, hidden: int = 64, latent: int = 32) -> None:
        super().__init__()
        self.lin1 = nn.Linear(in_channels, hidden)
        self.lin2 = nn.Linear(hidden, latent)

    def encode(self, x: Tensor, adj: Tensor) -> Tensor:
        a = gcn_normalised(adj)
        return a @ self.lin2(torch.relu(a @ self.lin1(x)))

    def logits(self, x: Tensor, adj: Tensor) -> Tensor:
        z = self.encode(x, adj)
        return z @ z.transpose(-1, -2)

    def forward(self, x: Tensor, adj: Tensor) -> Tensor:
        """Edge probabilities ``sigmoid(Z Z^T)`` with a zero diagonal, ``[.., N, N]``."""
        return off_diagonal(torch.sigmoid(self.logits(x, adj)))


def off_diagonal(p: Tensor) -> Tensor:
    return p * (1 - torch.eye(p.size(-1), dtype=p.dtype))


def calibrated(logits: Tensor, edges: int) -> Tensor:
    """``sigmoid(logits - c)`` of one graph's ``[N, N]`` decoder logits, zero diagonal, with the
    one offset ``c`` that puts exactly ``edges`` pairs above 0.5 (ties aside): the decoder's
    ranking, at the edge count the attacker believes."""
    n = logits.size(-1)
    iu = torch.triu_indices(n, n, 1)
    ranked = logits[iu[0], iu[1]].sort(descending=True).values
    edges = min(max(edges, 0), ranked.numel())
    above = ranked[edges - 1] if edges else ranked[0] + 1
    below = ranked[edges] if edges < ranked.numel() else ranked[-1] - 1
    return off_diagonal(torch.sigmoid(logits - (above + below) / 2))


@dataclass(frozen=True)
class Training:
    epochs: int = 200
    lr: float = 0.01
    batch: int = 32
    mask_ratio: float = 0.5
    hidden: int = 64
    latent: int = 32


def drop_edges(adj: Tensor, ratio: float, gen: torch.Generator) -> Tensor:
    """``adj [B, N, N]`` with each undirected edge dropped with probability ``ratio``."""
    keep = (torch.rand(adj.shape, generator=gen) >= ratio).float().triu(1)
    keep = keep + keep.transpose(-1, -2)
    return adj * keep


def train_mgae(graphs, in_channels: int, settings: Training = Training(), seed: int = 0,
               check=lambda: None) -> MaskedGAE:
    """Fit the auto-encoder to ``graphs`` (PyG ``Data``); ``check`` is called every batch (the
    attack's time budget)."""
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model = MaskedGAE(in_channels, settings.hidden, settings.latent)
    opt = torch.optim.Adam(model.parameters(), lr=settings.lr)
    for x, adj, mask in aux_batches(graphs, settings.epochs, settings.batch, gen, check):
        pairs = (mask.unsqueeze(-1) & mask.unsqueeze(-2)) & ~torch.eye(adj.size(-1), dtype=torch.bool)
        pred = model(x.float(), drop_edges(adj, settings.mask_ratio, gen))
        loss = ((pred - adj) ** 2)[pairs].mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model.eval()
