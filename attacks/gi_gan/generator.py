r"""GI-GAN's graph prior: a MolGAN-style generator trained with WGAN-GP on the attacker's
auxiliary graphs (De Cao & Kipf, "MolGAN: An implicit generative model for small molecular
graphs", arXiv:1805.11973), with the settings GraphDLG's Table 1 baseline states (Wei et al.,
arXiv 2601.19745, 2026: its "GI-GAN" row).

Generator: :math:`z \in \mathbb R^{32}` (N(0, 1)) -> MLP [128, 256, 512] with tanh -> edge logits
:math:`E` (``N_max x N_max``, symmetrised as :math:`(E + E^\top)/2`) and node logits
(``N_max x d_X``). The graph it hands to the critic and to the attack is continuous: edge
probabilities :math:`\sigma(E)` with a zero diagonal, and the node logits through a softmax per
one-hot block of the feature schema, in the model's (possibly standardised) encoding
(``attacks.common.schema_softmax``; for TU data one block: the node-type softmax).

Critic: MolGAN's discriminator with a plain GCN in place of its relational GCN (one edge type
here), its input each node's features and log(1 + degree) (soft degree for generated graphs):
two dense GCN layers of widths 128 and 64, tanh, on
:math:`D^{-1/2}(A + I)D^{-1/2}`; MolGAN's gated sum over the nodes,
:math:`\tanh(\sum_v \sigma(i([h_v, x_v])) \odot \tanh(j([h_v, x_v])))` of width 128; then an MLP
[128, 64] with tanh and one linear output (no sigmoid: a Wasserstein critic).

Training: WGAN-GP (Gulrajani et al. 2017), gradient penalty weight 10 on random interpolates of
real and generated (features, adjacency) pairs, 5 critic steps per generator step, Adam lr 1e-4,
betas (0.5, 0.999) for both; real graphs zero-padded to ``N_max`` (the largest auxiliary graph).

Choices where MolGAN and GraphDLG are silent or do not fit, marked [choice]:

- [choice] continuous outputs during training (softmax / sigmoid); MolGAN also offers Gumbel
  (hard or soft) samples.
- [choice] node counts: MolGAN has a "no atom" type; here every generated graph is masked to the
  node count of a real graph drawn with it (rows and columns past n zeroed), so the critic sees
  the same padding on both sides, and the attack crops the first n nodes the same way.
- [choice] the degree column: a normalised GCN on identical node features gives every node of a
  regular graph the same output whatever its degree, so without it the critic cannot tell a
  dense soft graph (all pairs at 0.5) from a sparse ring (``critic_degree: false`` leaves it out).
- [choice] batches of 32 real graphs drawn at random (with replacement across steps), the
  critic's widths above (MolGAN's), no dropout; ``steps`` counts generator updates.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import torch
from torch import Tensor, nn
from torch_geometric.data import Batch
from torch_geometric.utils import to_dense_adj, to_dense_batch

from attacks.common.parametrisations import schema_softmax
from fedgraph_sim.data.schema import FeatureSchema
from fedgraph_sim.models.convs import gcn_normalised


@dataclass(frozen=True)
class Training:
    """The generator's and critic's settings (hashable: part of the run-scoped cache key)."""

    steps: int = 500  # generator updates (each after n_critic critic updates)
    n_critic: int = 5
    batch: int = 32
    lr: float = 1e-4
    betas: tuple[float, float] = (0.5, 0.999)
    gp: float = 10.0  # gradient-penalty weight lambda
    z_dim: int = 32
    hidden: tuple[int, ...] = (128, 256, 512)
    critic_conv: tuple[int, ...] = (128, 64)
    critic_aggregate: int = 128
    critic_mlp: tuple[int, ...] = (128, 64)
    critic_degree: bool = True  # the critic's log(1 + degree) input column ([choice], see above)


def node_mask(counts: Tensor, n_max: int) -> Tensor:
    """``[B, n_max]`` True for the first ``counts[b]`` nodes of graph b."""
    return torch.arange(n_max).unsqueeze(0) < counts.unsqueeze(1)


def masked(x: Tensor, adj: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
    """Features and adjacency with the nodes outside ``mask`` zeroed (rows and columns)."""
    m = mask.to(x.dtype)
    return x * m.unsqueeze(-1), adj * m.unsqueeze(-1) * m.unsqueeze(-2)


class Generator(nn.Module):
    """``z [B, z_dim]`` -> ``(x [B, N_max, F], adj [B, N_max, N_max])``: schema softmax rows and
    symmetric edge probabilities with a zero diagonal."""

    def __init__(self, n_max: int, num_features: int, schema: FeatureSchema | None = None, z_dim: int = 32,
                 hidden: tuple[int, ...] = (128, 256, 512)) -> None:
        super().__init__()
        self.n_max, self.num_features, self.z_dim, self.schema = n_max, num_features, z_dim, schema
        layers: list[nn.Module] = []
        width = z_dim
        for h in hidden:
            layers += [nn.Linear(width, h), nn.Tanh()]
            width = h
        self.body = nn.Sequential(*layers)
        self.edge_head = nn.Linear(width, n_max * n_max)
        self.node_head = nn.Linear(width, n_max * num_features)
        #: Filled by :func:`train_generator`: seconds, steps, the critic's Wasserstein estimates.
        self.stats: dict = {}

    def logits(self, z: Tensor) -> tuple[Tensor, Tensor]:
        """Symmetrised edge logits ``[B, N, N]`` (zero diagonal) and node logits ``[B, N, F]``."""
        h = self.body(z)
        e = self.edge_head(h).view(-1, self.n_max, self.n_max)
        upper = ((e + e.transpose(-1, -2)) / 2).triu(1)  # mirrored from one triangle: exactly symmetric
        return upper + upper.transpose(-1, -2), self.node_head(h).view(-1, self.n_max, self.num_features)

    def features(self, node_logits: Tensor) -> Tensor:
        if self.schema is None or self.schema.width != self.num_features:
            return torch.softmax(node_logits, dim=-1)
        return schema_softmax(node_logits, self.schema)

    def forward(self, z: Tensor) -> tuple[Tensor, Tensor]:
        edges, nodes = self.logits(z)
        upper = torch.sigmoid(edges).triu(1)  # mirrored after the sigmoid too: bitwise symmetric
        adj = upper + upper.transpose(-1, -2)
        return self.features(nodes), adj


class Critic(nn.Module):
    """MolGAN's discriminator with GCN layers: ``(x, adj, mask) -> [B]`` scores."""

    def __init__(self, num_features: int, conv: tuple[int, ...] = (128, 64), aggregate: int = 128,
                 mlp: tuple[int, ...] = (128, 64), degree: bool = True) -> None:
        super().__init__()
        self.degree = degree
        widths = (num_features + int(degree),) + tuple(conv)  # the features (and log(1 + degree))
        self.convs = nn.ModuleList(nn.Linear(a, b) for a, b in zip(widths, widths[1:]))
        self.gate = nn.Linear(widths[-1] + widths[0], aggregate)
        self.value = nn.Linear(widths[-1] + widths[0], aggregate)
        layers: list[nn.Module] = []
        width = aggregate
        for h in mlp:
            layers += [nn.Linear(width, h), nn.Tanh()]
            width = h
        self.mlp = nn.Sequential(*layers, nn.Linear(width, 1))

    def forward(self, x: Tensor, adj: Tensor, mask: Tensor) -> Tensor:
        a = gcn_normalised(adj)
        if self.degree:
            x = torch.cat([x, torch.log1p(adj.sum(-1, keepdim=True))], dim=-1)
        h = x
        for conv in self.convs:
            h = torch.tanh(a @ conv(h))
        hx = torch.cat([h, x], dim=-1)
        m = mask.to(x.dtype).unsqueeze(-1)
        pooled = torch.tanh((torch.sigmoid(self.gate(hx)) * torch.tanh(self.value(hx)) * m).sum(1))
        return self.mlp(pooled).squeeze(-1)


def gradient_penalty(critic: Critic, real: tuple[Tensor, Tensor], fake: tuple[Tensor, Tensor], mask: Tensor,
                     gen: torch.Generator) -> Tensor:
    """WGAN-GP's :math:`E[(\\lVert \\nabla D(\\hat g) \\rVert - 1)^2]` on interpolates of real and
    generated ``(x, adj)`` pairs of the same node counts (``mask``), the norm over both."""
    eps = torch.rand(real[0].size(0), 1, 1, generator=gen, dtype=real[0].dtype)
    x = (eps * real[0] + (1 - eps) * fake[0]).requires_grad_(True)
    adj = (eps * real[1] + (1 - eps) * fake[1]).requires_grad_(True)
    gx, ga = torch.autograd.grad(critic(x, adj, mask).sum(), (x, adj), create_graph=True)
    norm = torch.sqrt(gx.flatten(1).pow(2).sum(1) + ga.flatten(1).pow(2).sum(1) + 1e-12)
    return ((norm - 1) ** 2).mean()


@dataclass
class PaddedGraphs:
    """Graphs zero-padded to ``n_max``: ``x [G, N, F]``, ``adj [G, N, N]`` (0/1), ``counts [G]``."""

    x: Tensor
    adj: Tensor
    counts: Tensor
    n_max: int = field(init=False)

    def __post_init__(self) -> None:
        self.n_max = self.x.size(1)


def pad(graphs, n_max: int | None = None) -> PaddedGraphs:
    """PyG ``Data`` graphs as dense tensors padded to ``n_max`` (default: the largest)."""
    graphs = list(graphs)
    n_max = n_max or max(int(g.num_nodes) for g in graphs)
    batch = Batch.from_data_list(graphs)
    x, _ = to_dense_batch(batch.x.float(), batch.batch, max_num_nodes=n_max)
    adj = to_dense_adj(batch.edge_index, batch.batch, max_num_nodes=n_max).clamp(max=1)
    adj = adj * (1 - torch.eye(n_max))
    counts = torch.tensor([int(g.num_nodes) for g in graphs])
    return PaddedGraphs(x, adj, counts)


def train_generator(aux_graphs, num_features: int, settings: Training = Training(), seed: int = 0,
                    check: Callable[[], None] = lambda: None, schema: FeatureSchema | None = None,
                    n_max: int | None = None) -> Generator:
    """Train a generator on ``aux_graphs`` (PyG ``Data``) with WGAN-GP; returns it frozen, in eval
    mode, with ``stats`` (seconds, steps, the critic's last Wasserstein estimates). ``check`` is
    called every critic step (the attack's time budget). ``n_max``: the padded size (default the
    largest auxiliary graph). The global RNG is left as it was."""
    start = time.perf_counter()
    data = pad(aux_graphs, n_max)
    if data.x.size(-1) != num_features:
        raise ValueError(f"auxiliary features have width {data.x.size(-1)}, the model takes {num_features}")
    gen = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        generator = Generator(data.n_max, num_features, schema, settings.z_dim, settings.hidden)
        critic = Critic(num_features, settings.critic_conv, settings.critic_aggregate, settings.critic_mlp,
                        settings.critic_degree)
    opt_g = torch.optim.Adam(generator.parameters(), lr=settings.lr, betas=settings.betas)
    opt_c = torch.optim.Adam(critic.parameters(), lr=settings.lr, betas=settings.betas)
    total = data.x.size(0)

    def real_batch():
        idx = torch.randint(total, (settings.batch,), generator=gen)
        return data.x[idx], data.adj[idx], node_mask(data.counts[idx], data.n_max)

    def fake_batch(mask: Tensor):
        z = torch.randn(mask.size(0), settings.z_dim, generator=gen)
        return masked(*generator(z), mask)

    wasserstein: list[float] = []
    for _ in range(settings.steps):
        for _ in range(settings.n_critic):
            check()
            x, adj, mask = real_batch()
            with torch.no_grad():
                fake = fake_batch(mask)
            gap = critic(x, adj, mask).mean() - critic(*fake, mask).mean()
            loss = -gap + settings.gp * gradient_penalty(critic, (x, adj), fake, mask, gen)
            opt_c.zero_grad()
            loss.backward()
            opt_c.step()
        wasserstein.append(float(gap.detach()))
        _, _, mask = real_batch()
        loss = -critic(*fake_batch(mask), mask).mean()
        opt_g.zero_grad()
        loss.backward()
        opt_g.step()
    generator.eval().requires_grad_(False)
    generator.stats = {"seconds": time.perf_counter() - start, "steps": settings.steps,
                       "wasserstein": wasserstein[-10:], "n_max": data.n_max}
    return generator
