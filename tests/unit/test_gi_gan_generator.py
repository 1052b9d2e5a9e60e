"""GI-GAN's MolGAN-style generator, GCN critic and WGAN-GP training (attacks/gi_gan/generator.py)."""

import torch
from torch_geometric.data import Data
from torch_geometric.utils import dense_to_sparse

from attacks.gi_gan.generator import (Critic, Generator, Training, gradient_penalty, masked, node_mask, pad,
                                      train_generator)
from fedgraph_sim.data import make_synthetic

TINY = Training(steps=60, n_critic=2, batch=8, lr=1e-3, hidden=(32, 64), critic_conv=(16, 16), critic_aggregate=16,
                critic_mlp=(16,))


def ring(n=6):
    a = torch.zeros(n, n)
    for i in range(n):
        a[i, (i + 1) % n] = a[(i + 1) % n, i] = 1
    return a


def rings(count=16, n=6, width=3):
    x = torch.zeros(n, width)
    x[:, 0] = 1  # one node type
    return [Data(x=x, edge_index=dense_to_sparse(ring(n))[0], num_nodes=n, graph_id=i) for i in range(count)]


def test_outputs_are_softmax_rows_and_symmetric_zero_diagonal_edge_probabilities():
    torch.manual_seed(0)
    g = Generator(7, 5)
    x, adj = g(torch.randn(4, 32))
    assert x.shape == (4, 7, 5) and adj.shape == (4, 7, 7)
    assert torch.allclose(x.sum(-1), torch.ones(4, 7))
    assert torch.equal(adj, adj.transpose(-1, -2)) and adj.diagonal(dim1=-2, dim2=-1).abs().sum() == 0
    assert (adj >= 0).all() and (adj <= 1).all()


def test_the_schema_softmax_is_one_softmax_per_block():
    data = make_synthetic(num_graphs=2, seed=0)
    torch.manual_seed(0)
    g = Generator(5, data.schema.width, data.schema)
    x, _ = g(torch.randn(2, 32))
    for s in data.schema.slices().values():
        raw = data.schema.destandardize(x)[..., s]
        assert torch.allclose(raw.sum(-1), torch.ones(2, 5), atol=1e-5)


def test_padding_and_masking_zero_the_nodes_past_the_count():
    graphs = rings(2, n=4) + rings(1, n=6)
    data = pad(graphs)
    assert data.n_max == 6 and data.counts.tolist() == [4, 4, 6]
    assert data.x[0, 4:].abs().sum() == 0 and data.adj[0, 4:].abs().sum() == 0
    assert torch.equal(data.adj[2], ring(6))
    x, adj = masked(torch.ones(3, 6, 3), torch.ones(3, 6, 6), node_mask(data.counts, 6))
    assert x[0, 4:].sum() == 0 and adj[0, :, 4:].sum() == 0 and adj[0, :4, :4].sum() == 16


def test_the_gradient_penalty_is_finite_and_differentiable():
    torch.manual_seed(0)
    critic, data = Critic(3, (8, 8), 8, (8,)), pad(rings(4))
    mask = node_mask(data.counts, data.n_max)
    fake = masked(*Generator(6, 3)(torch.randn(4, 32)), mask)
    gp = gradient_penalty(critic, (data.x, data.adj), fake, mask, torch.Generator().manual_seed(0))
    assert torch.isfinite(gp) and gp > 0
    gp.backward()
    grads = [p.grad for p in critic.parameters() if p.grad is not None]  # not the last bias: no input gradient
    assert len(grads) >= len(list(critic.parameters())) - 1 and all(torch.isfinite(g).all() for g in grads)


def test_training_on_rings_moves_the_edge_density_toward_the_data():
    """All aux graphs are the same 10-ring (density 2/9 off the diagonal); an untrained generator
    sits near sigmoid(0) = 0.5 per pair, a trained one at least halfway closer to 2/9."""
    graphs = rings(16, n=10)
    target = 2 / 9

    def density(g):
        with torch.no_grad():
            _, adj = g(torch.randn(64, g.z_dim, generator=torch.Generator().manual_seed(1)))
        return float(adj.sum((1, 2)).mean() / 90)

    untrained = train_generator(graphs, 3, Training(**{**TINY.__dict__, "steps": 0}), seed=0)
    trained = train_generator(graphs, 3, TINY, seed=0)
    assert abs(density(trained) - target) < 0.5 * abs(density(untrained) - target)
    assert trained.stats["steps"] == TINY.steps and trained.stats["n_max"] == 10
    assert not any(p.requires_grad for p in trained.parameters())  # frozen for the attack


def test_training_is_seeded_and_leaves_the_global_rng_alone():
    graphs = rings(8)
    settings = Training(**{**TINY.__dict__, "steps": 3})
    torch.manual_seed(5)
    before = torch.rand(1)
    torch.manual_seed(5)
    a = train_generator(graphs, 3, settings, seed=1)
    assert torch.equal(torch.rand(1), before)
    b = train_generator(graphs, 3, settings, seed=1)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))


def test_without_the_degree_column_the_critic_cannot_tell_a_dense_regular_graph_from_a_ring():
    """The reason for the critic's degree input: on identical node features a normalised GCN gives
    every node of a regular graph the same embedding whatever its degree."""
    torch.manual_seed(0)
    x = torch.zeros(1, 10, 3)
    x[..., 0] = 1
    sparse, dense = ring(10)[None], (torch.ones(10, 10) - torch.eye(10))[None] * 0.5
    mask = torch.ones(1, 10, dtype=torch.bool)
    blind, seeing = Critic(3, (8, 8), 8, (8,), degree=False), Critic(3, (8, 8), 8, (8,))
    assert torch.allclose(blind(x, sparse, mask), blind(x, dense, mask), atol=1e-6)
    assert not torch.allclose(seeing(x, sparse, mask), seeing(x, dense, mask), atol=1e-4)
