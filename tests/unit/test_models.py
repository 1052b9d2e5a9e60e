import pytest
import torch
from torch_geometric.data import Batch, Data
from torch_geometric.utils import erdos_renyi_graph

from fedgraph_sim.errors import ConfigError
from fedgraph_sim.models import GraphClassifier, to_dense


def random_batch(seed=0, sizes=(5, 9, 13, 7), features=6, classes=3):
    gen = torch.Generator().manual_seed(seed)
    graphs = []
    for i, n in enumerate(sizes):
        torch.manual_seed(seed * 100 + i)
        edge_index = erdos_renyi_graph(n, 0.35)
        x = torch.randn(n, features, generator=gen)
        graphs.append(Data(x=x, edge_index=edge_index, y=torch.tensor([i % classes])))
    return Batch.from_data_list(graphs)


def loss_and_grads(model, loss):
    grads = torch.autograd.grad(loss, list(model.parameters()), allow_unused=True)
    return loss.detach(), [torch.zeros_like(p) if g is None else g for p, g in zip(model.parameters(), grads)]


@pytest.mark.parametrize("conv", ["gcn", "gat", "sage"])
@pytest.mark.parametrize("pool", ["mean", "sum", "max"])
@pytest.mark.parametrize("placement", ["after_pool", "per_node"])
def test_dense_forward_equals_sparse(conv, pool, placement):
    batch = random_batch()
    torch.manual_seed(1)
    model = GraphClassifier(6, 3, conv=conv, pool=pool, readout_placement=placement)
    ce = torch.nn.functional.cross_entropy
    sparse_loss, sparse_grads = loss_and_grads(model, ce(model(batch.x, batch.edge_index, batch.batch), batch.y))
    x, adj, mask = to_dense(batch)
    dense_loss, dense_grads = loss_and_grads(model, ce(model.forward_dense(x, adj, mask), batch.y))
    assert torch.allclose(sparse_loss, dense_loss, atol=1e-5)
    for (name, _), gs, gd in zip(model.named_parameters(), sparse_grads, dense_grads):
        assert torch.allclose(gs, gd, atol=1e-5), name
    assert any(g.abs().sum() > 0 for g in sparse_grads)


@pytest.mark.parametrize("conv", ["gcn", "gat", "sage"])
def test_mlp_readout_and_three_layers(conv):
    batch = random_batch(seed=3)
    model = GraphClassifier(6, 3, conv=conv, layers=3, hidden=8, readout="mlp")
    x, adj, mask = to_dense(batch)
    sparse = model(batch.x, batch.edge_index, batch.batch)
    assert torch.allclose(sparse, model.forward_dense(x, adj, mask), atol=1e-5)


def test_dense_forward_accepts_a_single_unbatched_graph():
    batch = random_batch(sizes=(8,))
    model = GraphClassifier(6, 3)
    x, adj, _ = to_dense(batch)
    assert torch.allclose(model.forward_dense(x[0], adj[0]), model(batch.x, batch.edge_index), atol=1e-6)


def test_soft_adjacency_is_differentiable():
    model = GraphClassifier(6, 3)
    logits = torch.randn(7, 7, requires_grad=True)
    adj = torch.sigmoid(torch.triu(logits, 1))
    adj = adj + adj.t()
    out = model.forward_dense(torch.randn(7, 6), adj)
    out.sum().backward()
    assert logits.grad is not None and logits.grad.abs().sum() > 0


def test_default_architecture_follows_graphdlg():
    model = GraphClassifier(7, 2)
    assert len(model.convs) == 2 and model.convs[0].out_channels == 16
    assert model.pool == "mean" and isinstance(model.classifier, torch.nn.Linear)
    assert model.final_linear.bias is not None


@pytest.mark.parametrize("kwargs, key", [
    (dict(hidden=0), "model.hidden"),
    (dict(layers=0), "model.layers"),
    (dict(pool="median"), "model.pool"),
    (dict(readout="attention"), "model.readout"),
    (dict(readout_placement="x"), "model.readout_placement"),
    (dict(conv="gin"), "unknown model 'gin'; valid models: gcn, gat, sage"),
])
def test_bad_model_config(kwargs, key):
    with pytest.raises(ConfigError, match=key):
        GraphClassifier(7, 2, **kwargs)
