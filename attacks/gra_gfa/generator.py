r"""GRA-GFA's feature generator (Chen, Ma, Ma, Zheng, Zhang, "An Empirical Evaluation of the Data
Leakage in Federated Graph Learning", IEEE TNSE 11(2), 2024; as GraphDLG, Wei et al. 2026, App.
A.4, describes it): a two-layer GCN that maps a graph's structure and random features to its
node types, trained on the attacker's auxiliary graphs.

:math:`\mathrm{logits} = \hat A\,\mathrm{ReLU}(\hat A Z W_1) W_2` with
:math:`\hat A = D^{-1/2}(A + I)D^{-1/2}` (dense, so a weighted adjacency such as stage 1's edge
probabilities goes in as it is) and :math:`Z \sim N(0, 1)` of width ``noise_dim``, drawn afresh
for every batch. One softmax per block of the feature schema, fitted by cross-entropy to the
value of that block (for TU data: the one block, the node type). Where GraphDLG's description is
silent (all of it but "2-layer GCN", "random features", "aux graphs") these are our choices:
per-block heads, hidden width 64, Adam lr 0.01, 100 epochs of mini-batches of 32 graphs.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from attacks.common.aux import aux_batches
from fedgraph_sim.data.schema import FeatureSchema
from fedgraph_sim.models.convs import gcn_normalised


@dataclass(frozen=True)
class Training:
    noise_dim: int
    hidden: int = 64
    epochs: int = 100
    lr: float = 0.01
    batch: int = 32


class TypeGenerator(nn.Module):
    """Two dense GCN layers from ``noise_dim`` random features to one logit per schema column."""

    def __init__(self, noise_dim: int, hidden: int, schema: FeatureSchema) -> None:
        super().__init__()
        self.noise_dim, self.schema = noise_dim, schema
        self.lin1 = nn.Linear(noise_dim, hidden)
        self.lin2 = nn.Linear(hidden, schema.width)

    def forward(self, adj: Tensor, noise: Tensor) -> Tensor:
        """Logits ``[.., N, width]`` for ``adj [.., N, N]`` and ``noise [.., N, noise_dim]``."""
        a = gcn_normalised(adj)
        return a @ self.lin2(torch.relu(a @ self.lin1(noise)))

    def loss(self, logits: Tensor, values: Tensor, mask: Tensor) -> Tensor:
        """Cross-entropy per block against the blocks' value indices ``values [.., N, blocks]``,
        summed over blocks, averaged over the real nodes of ``mask``."""
        return sum(nn.functional.cross_entropy(logits[..., s][mask], values[..., j][mask])
                   for j, s in enumerate(self.schema.slices().values()))

    @torch.no_grad()
    def predict(self, adj: Tensor, noise: Tensor) -> Tensor:
        """Per node and block, the most probable value's index, ``[N, blocks]`` (``schema.encode``'s input)."""
        logits = self(adj.float(), noise.float())
        return torch.stack([logits[..., s].argmax(-1) for s in self.schema.slices().values()], dim=-1)


def train_generator(graphs, schema: FeatureSchema, settings: Training, seed: int = 0,
                    check=lambda: None) -> TypeGenerator:
    """Fit the generator to ``graphs`` (PyG ``Data`` whose ``x`` is in the model's encoding):
    their true adjacency and fresh noise in, their node values out. ``check`` is called every
    batch (the attack's time budget)."""
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model = TypeGenerator(settings.noise_dim, settings.hidden, schema)
    opt = torch.optim.Adam(model.parameters(), lr=settings.lr)
    for x, adj, mask in aux_batches(graphs, settings.epochs, settings.batch, gen, check):
        noise = torch.randn(*x.shape[:2], settings.noise_dim, generator=gen)
        loss = model.loss(model(adj.float(), noise), schema.decode(x.float()), mask)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model.eval()
