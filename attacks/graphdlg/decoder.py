"""The structure decoder and its training on auxiliary graphs (GraphDLG Sec. 4.2, Eqs. 19-21).

``F_de``: an MLP ``d_L -> 100 -> 250 -> N_max^2`` with ReLU between layers and a sigmoid at the
end; the output is reshaped to ``N_max x N_max`` and symmetrised as ``(P + P^T) / 2``. It is
trained to map the embedding the attacked model's own GCN layers and pooling give an auxiliary
graph (``F_en``, eval mode, the round's weights) back to that graph's adjacency, zero-padded to
N_max, with the paper's squared error summed over the padded matrix (so the decoder also learns
where a graph ends) and Adam, lr 1e-3.

Adapter (Eqs. 20-21, lambda = 0.2): ``L = L_recon + lambda * MMD`` with the linear-kernel MMD
``|| mean phi(aux) - mean phi(victim) ||``. With a frozen encoder, MMD between aux and victim
embeddings is a constant (zero gradient), so we read it one of two ways:

- reading ``A`` (default): phi is the decoder's first hidden layer, applied to aux embeddings and
  to the victim embeddings recovered from gradients (DAN-style adaptation);
- reading ``B``: a trainable copy of the encoder, initialised from the round's weights, embeds the
  aux graphs; phi is that copy's output, compared with the fixed victim embeddings.

Training uses batches of 64, at most ``epochs`` epochs, and early stopping with patience 20 on a
10% validation split of the aux graphs (reconstruction loss only): our choices, which the paper
leaves open.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch_geometric.data import Batch, Data
from torch_geometric.utils import to_dense_adj

from fedgraph_sim.models import GraphClassifier

ADAPTERS = ("A", "B", "none")


class StructureDecoder(nn.Module):
    def __init__(self, d_in: int, n_max: int, hidden: tuple[int, int] = (100, 250)) -> None:
        super().__init__()
        self.n_max = n_max
        self.first = nn.Sequential(nn.Linear(d_in, hidden[0]), nn.ReLU())
        self.rest = nn.Sequential(nn.Linear(hidden[0], hidden[1]), nn.ReLU(),
                                  nn.Linear(hidden[1], n_max * n_max), nn.Sigmoid())

    def forward(self, h: Tensor) -> Tensor:
        p = self.rest(self.first(h)).view(-1, self.n_max, self.n_max)
        return (p + p.transpose(1, 2)) / 2


def encode(model: GraphClassifier, graphs: list[Data]) -> Tensor:
    """Pooled embeddings ``[len(graphs), d_L]`` of the model's GCN layers (F_en)."""
    batch = Batch.from_data_list([Data(x=g.x.float(), edge_index=g.edge_index, num_nodes=g.num_nodes)
                                  for g in graphs])
    return model.graph_embedding(batch.x, batch.edge_index, batch.batch)


def padded_adjacency(graphs: list[Data], n_max: int) -> Tensor:
    """Adjacencies zero-padded (or cropped) to ``n_max x n_max``."""
    out = torch.zeros(len(graphs), n_max, n_max)
    for i, g in enumerate(graphs):
        n = min(g.num_nodes, n_max)
        out[i, :n, :n] = to_dense_adj(g.edge_index, max_num_nodes=g.num_nodes)[0][:n, :n]
    return out


def linear_mmd(a: Tensor, b: Tensor) -> Tensor:
    """``|| mean(a) - mean(b) ||`` (the paper's MMD with phi = identity on the given features)."""
    return torch.linalg.vector_norm(a.mean(0) - b.mean(0))


@dataclass
class DecoderTraining:
    epochs: int = 200
    batch_size: int = 64
    lr: float = 1e-3
    patience: int = 20
    val_fraction: float = 0.1
    adapter: str = "A"
    lam: float = 0.2


def adapter_loss(decoder: StructureDecoder, h_aux: Tensor, victim: Tensor | None,
                 adapter: str) -> Tensor:
    """The MMD term for one batch; zero when there is no adapter or no victim embedding."""
    if adapter == "none" or victim is None or len(victim) == 0:
        return h_aux.new_zeros(())
    if adapter == "A":
        return linear_mmd(decoder.first(h_aux), decoder.first(victim))
    return linear_mmd(h_aux, victim)  # reading B: h_aux comes from the trainable encoder copy


def train_decoder(decoder: StructureDecoder, model: GraphClassifier, aux: list[Data],
                  victim: Tensor | None, cfg: DecoderTraining, gen: torch.Generator,
                  max_epochs: int | None = None, budget_check=lambda: None) -> dict:
    """Train (or fine-tune) ``decoder`` in place; returns a small training report."""
    n_max = decoder.n_max
    order = torch.randperm(len(aux), generator=gen).tolist()
    n_val = max(1, int(round(cfg.val_fraction * len(aux)))) if len(aux) >= 10 else 0
    val_idx, train_idx = order[:n_val], order[n_val:]
    targets = padded_adjacency(aux, n_max)
    encoder = copy.deepcopy(model).train(False) if cfg.adapter == "B" else model
    params = list(decoder.parameters()) + (list(encoder.convs.parameters()) if cfg.adapter == "B" else [])
    if cfg.adapter != "B":
        with torch.no_grad():
            h_fixed = encode(model, aux)
    opt = torch.optim.Adam(params, lr=cfg.lr)
    victim = None if victim is None else victim.float()
    best, best_state, stale, epochs_run = float("inf"), None, 0, 0
    for epoch in range(max_epochs or cfg.epochs):
        budget_check()
        perm = torch.tensor(train_idx)[torch.randperm(len(train_idx), generator=gen)]
        for start in range(0, len(perm), cfg.batch_size):
            idx = perm[start:start + cfg.batch_size]
            h = encode(encoder, [aux[i] for i in idx.tolist()]) if cfg.adapter == "B" else h_fixed[idx]
            recon = ((decoder(h) - targets[idx]) ** 2).sum((1, 2)).mean()
            loss = recon + cfg.lam * adapter_loss(decoder, h, victim, cfg.adapter)
            opt.zero_grad()
            loss.backward()
            opt.step()
        epochs_run = epoch + 1
        if not val_idx:
            continue
        with torch.no_grad():
            h_val = encode(encoder, [aux[i] for i in val_idx]) if cfg.adapter == "B" else h_fixed[val_idx]
            val = float(((decoder(h_val) - targets[val_idx]) ** 2).sum((1, 2)).mean())
        if val < best - 1e-6:
            best, stale = val, 0
            best_state = copy.deepcopy(decoder.state_dict())
        else:
            stale += 1
            if stale >= cfg.patience:
                break
    if best_state is not None:
        decoder.load_state_dict(best_state)
    return {"epochs": epochs_run, "val_loss": best}
