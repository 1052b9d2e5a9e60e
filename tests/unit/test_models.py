import pytest
import torch
from torch_geometric.data import Batch, Data
from torch_geometric.utils import erdos_renyi_graph

from fedgraph_sim.errors import ConfigError
from fedgraph_sim.models import GraphClassifier, build_model, to_dense


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


def assert_dense_equals_sparse(model, batch):
    """The dense forward's loss and every parameter gradient equal the sparse one's; returns the
    sparse gradients."""
    ce = torch.nn.functional.cross_entropy
    sparse_loss, sparse_grads = loss_and_grads(model, ce(model(batch.x, batch.edge_index, batch.batch), batch.y))
    x, adj, mask = to_dense(batch)
    dense_loss, dense_grads = loss_and_grads(model, ce(model.forward_dense(x, adj, mask), batch.y))
    assert torch.allclose(sparse_loss, dense_loss, atol=1e-5)
    for (name, _), gs, gd in zip(model.named_parameters(), sparse_grads, dense_grads):
        assert torch.allclose(gs, gd, atol=1e-5), name
    return sparse_grads


@pytest.mark.parametrize("conv", ["gcn", "gat", "sage", "gin"])
@pytest.mark.parametrize("pool", ["mean", "sum", "max"])
@pytest.mark.parametrize("placement", ["after_pool", "per_node"])
def test_dense_forward_equals_sparse(conv, pool, placement):
    batch = random_batch()
    torch.manual_seed(1)
    model = GraphClassifier(6, 3, conv=conv, pool=pool, readout_placement=placement)
    sparse_grads = assert_dense_equals_sparse(model, batch)
    assert any(g.abs().sum() > 0 for g in sparse_grads)


@pytest.mark.parametrize("conv", ["gcn", "gat", "sage", "gin"])
def test_mlp_readout_and_three_layers(conv):
    batch = random_batch(seed=3)
    model = GraphClassifier(6, 3, conv=conv, layers=3, hidden=8, readout="mlp")
    x, adj, mask = to_dense(batch)
    sparse = model(batch.x, batch.edge_index, batch.batch)
    assert torch.allclose(sparse, model.forward_dense(x, adj, mask), atol=1e-5)


def test_gin_with_a_trained_eps_has_the_same_dense_and_sparse_gradients():
    batch = random_batch(seed=5)
    torch.manual_seed(2)
    model = GraphClassifier(6, 3, conv="gin", layers=3, pool="sum", readout="mlp", train_eps=True)
    for conv in model.convs:  # a nonzero eps, so its term is checked too
        conv.eps.data.fill_(0.3)
    grads = dict(zip([n for n, _ in model.named_parameters()], assert_dense_equals_sparse(model, batch)))
    assert grads["convs.0.eps"].abs() > 0


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
    (dict(conv="gine"), "unknown model 'gine'; valid models: gcn, gat, sage, gin"),
    (dict(conv="gcn", train_eps=True), "model.train_eps"),
    (dict(pool="flatten"), "model.flatten_nodes"),
    (dict(flatten_nodes=10), "model.flatten_nodes"),
    (dict(pool="flatten", flatten_nodes=10, readout_placement="per_node"), "model.readout_placement"),
])
def test_bad_model_config(kwargs, key):
    with pytest.raises(ConfigError, match=key):
        build_model(kwargs, 7, 2)


GLG_VICTIM = dict(conv="sage", activation="sigmoid", hidden=100, pool="flatten", flatten_nodes=16)


@pytest.mark.parametrize("conv", ["sage", "gcn"])
def test_glg_flatten_readout_dense_equals_sparse_and_pads_with_zero_rows(conv):
    batch = random_batch(seed=2, sizes=(5, 9, 13, 7))
    torch.manual_seed(4)
    model = GraphClassifier(6, 3, **{**GLG_VICTIM, "conv": conv})
    assert model.classifier.in_features == 16 * 100  # vec(H) of N_max = 16 rows
    sparse_grads = assert_dense_equals_sparse(model, batch)
    h = model.graph_embedding(batch.x, batch.edge_index, batch.batch).view(4, 16, 100)
    assert (h[0, 5:] == 0).all() and (h[0, :5] != 0).any()  # sigmoid(b) would be 0.5, not 0
    # the readout weight's gradient on a padded row is zero: nothing flows through padding
    w_grad = dict(zip([n for n, _ in model.named_parameters()], sparse_grads))["classifier.weight"]
    assert (w_grad.view(3, 16, 100)[:, 13:] == 0).all()


def test_the_flatten_readout_refuses_a_graph_larger_than_its_rows():
    batch = random_batch(sizes=(20,))
    model = GraphClassifier(6, 3, **GLG_VICTIM)
    with pytest.raises(ValueError, match="20 nodes does not fit the flatten readout's 16 rows"):
        model(batch.x, batch.edge_index, batch.batch)


GRAIN_GCN = dict(conv="gcn", hidden=32, conv_bias=False, last_activation=False, readout="mlp",
                 readout_hidden=[32, 8], readout_input="concat_input", readout_placement="per_node")
GRAIN_GAT = dict(conv="gat", hidden=32, heads=2, residual=True, activation="elu", last_activation=False,
                 readout="mlp", readout_hidden=[32, 32], readout_placement="per_node")


@pytest.mark.parametrize("kwargs", [GRAIN_GCN, GRAIN_GAT], ids=["grain_gcn", "grain_gat"])
@pytest.mark.parametrize("loss", ["cross_entropy", "bce"])
def test_grain_architectures_dense_equals_sparse(kwargs, loss):
    from fedgraph_sim.models import classification_loss

    batch = random_batch(seed=5, classes=2)
    torch.manual_seed(2)
    model = GraphClassifier(6, 2, **kwargs)
    y = batch.y.view(-1)
    sparse_loss, sparse_grads = loss_and_grads(
        model, classification_loss(model(batch.x, batch.edge_index, batch.batch), y, loss))
    x, adj, mask = to_dense(batch)
    dense_loss, dense_grads = loss_and_grads(model, classification_loss(model.forward_dense(x, adj, mask), y, loss))
    assert torch.allclose(sparse_loss, dense_loss, atol=1e-5)
    for (name, _), gs, gd in zip(model.named_parameters(), sparse_grads, dense_grads):
        assert torch.allclose(gs, gd, atol=1e-5), name
    assert all(g.abs().sum() > 0 for g in sparse_grads)


def test_grain_gcn_layout():
    model = GraphClassifier(6, 2, **GRAIN_GCN)
    names = dict(model.named_parameters())
    assert not any(n.startswith("convs") and n.endswith("bias") for n in names)  # bias-free GCN
    assert names["classifier.0.weight"].shape == (32, 6 + 32)  # readout sees [X0 || H2]
    assert [m.out_features for m in model.classifier if isinstance(m, torch.nn.Linear)] == [32, 8, 2]
    assert isinstance(model.acts[-1], torch.nn.Identity) and isinstance(model.acts[0], torch.nn.ReLU)


def test_grain_gat_layout():
    model = GraphClassifier(6, 2, **GRAIN_GAT)
    first, last = model.convs
    assert first.heads == 2 and first.concat and not last.concat
    assert first.res.weight.shape == (64, 6) and last.lin.weight.shape == (64, 64)
    assert last.res.weight.shape == (32, 64)
    assert isinstance(model.acts[0], torch.nn.ELU) and isinstance(model.acts[1], torch.nn.Identity)


def test_bce_loss_is_the_mean_over_one_hot_entries():
    from fedgraph_sim.models import classification_loss

    logits = torch.tensor([[0.5, -1.0]])
    expected = torch.nn.functional.binary_cross_entropy_with_logits(logits, torch.tensor([[0.0, 1.0]]))
    assert torch.allclose(classification_loss(logits, torch.tensor([1]), "bce"), expected)
    soft = torch.tensor([[0.25, 0.75]])
    assert torch.allclose(classification_loss(logits, soft, "cross_entropy"),
                          -(soft * torch.log_softmax(logits, -1)).sum())


@pytest.mark.parametrize("kwargs, key", [
    (dict(heads=2), "model.heads"),
    (dict(readout_hidden=[8]), "model.readout_hidden"),
    (dict(readout="mlp", readout_hidden=[0]), "model.readout_hidden"),
    (dict(readout_input="both"), "model.readout_input"),
    (dict(activation="tanh"), "model.activation"),
])
def test_bad_grain_options(kwargs, key):
    with pytest.raises(ConfigError, match=key):
        build_model(kwargs, 7, 2)


def test_dense_sage_on_a_soft_adjacency_is_the_weighted_mean_of_the_neighbours():
    from fedgraph_sim.models.convs import dense_sage
    from torch_geometric.nn import SAGEConv

    torch.manual_seed(0)
    conv = SAGEConv(3, 2, aggr="mean")
    x = torch.randn(3, 3)
    adj = torch.tensor([[0.0, 0.2, 0.6], [0.2, 0.0, 0.0], [0.6, 0.0, 0.0]])
    mean0 = (0.2 * x[1] + 0.6 * x[2]) / 0.8
    expected = conv.lin_l(mean0) + conv.lin_r(x[0])
    assert torch.allclose(dense_sage(conv, x, adj)[0], expected, atol=1e-6)


@pytest.mark.parametrize("conv", ["gcn", "sage"])
def test_node_classifier_outputs_per_node_logits_dense_equal_to_sparse(conv):
    batch = random_batch(sizes=(6, 9), features=8, classes=3)
    torch.manual_seed(2)
    model = GraphClassifier(8, 3, conv=conv, activation="sigmoid", hidden=100, task="node")
    sparse = model(batch.x, batch.edge_index, batch.batch)
    x, adj, mask = to_dense(batch)
    dense = model.forward_dense(x, adj, mask)
    assert sparse.shape == (15, 3) and dense.shape == (2, 9, 3)
    assert torch.allclose(dense[mask], sparse, atol=1e-5)
    assert isinstance(model.acts[-1], torch.nn.Identity)  # no activation on the logits by default
    assert model.classifier is None and model.convs[-1].out_channels == 3
    assert f"{model.final_linear_name}.bias" in dict(model.named_parameters())


def test_node_classifier_with_a_per_node_readout_keeps_every_nodes_logits():
    """GRAIN's node classification: hidden-width layers, the readout on [X0 || H2] per node, no pooling."""
    batch = random_batch(sizes=(6, 9), features=8, classes=2)
    torch.manual_seed(3)
    model = GraphClassifier(8, 2, hidden=12, readout="mlp", readout_hidden=[10], readout_input="concat_input",
                            readout_placement="per_node", conv_bias=False, last_activation=False, task="node")
    assert model.convs[-1].out_channels == 12 and model.final_linear_name == "classifier.2"
    sparse = model(batch.x, batch.edge_index, batch.batch)
    x, adj, mask = to_dense(batch)
    dense = model.forward_dense(x, adj, mask)
    assert sparse.shape == (15, 2) and dense.shape == (2, 9, 2)
    assert torch.allclose(dense[mask], sparse, atol=1e-5)
    assert dense[~mask].abs().max() == 0  # padding rows carry no logits
    rows = torch.cat([batch.x, model.node_embeddings(batch.x, batch.edge_index)], dim=-1)
    assert torch.allclose(sparse, model.classifier(rows), atol=1e-6)


def test_a_node_classifier_has_a_readout_width_only_with_a_per_node_readout():
    """Its last layer gives the logits: no pooling or readout input whose width attacks could fit."""
    with pytest.raises(ValueError, match="no readout"):
        GraphClassifier(8, 3, task="node").readout_width
    per_node = GraphClassifier(8, 3, hidden=12, readout_input="concat_input", readout_placement="per_node",
                               task="node")
    assert per_node.readout_width == 8 + 12


def test_node_classifier_scores_labelled_nodes_only():
    g = Data(x=torch.randn(4, 3), edge_index=torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]]), y=torch.tensor([1]),
             node_y=torch.tensor([1, 0, 1, 0]), train_mask=torch.tensor([True, False, True, False]))
    model = GraphClassifier(3, 2, task="node")
    logits, targets = model.logits_and_targets(Batch.from_data_list([g]))
    assert logits.shape == (2, 2) and targets.tolist() == [1, 1]
    graph_logits, graph_targets = GraphClassifier(3, 2).logits_and_targets(Batch.from_data_list([g]))
    assert graph_logits.shape == (1, 2) and graph_targets.tolist() == [1]


def test_build_model_makes_the_same_model_from_the_config_section_or_its_dict():
    from fedgraph_sim.config import load_config
    from fedgraph_sim.models import build_model

    section = load_config(None, ["model.hidden=8", "model.layers=3"]).model
    torch.manual_seed(0)
    from_section = build_model(section, 5, 3)
    torch.manual_seed(0)
    from_dict = build_model(section.model_dump(), 5, 3)
    assert len(from_section.convs) == 3 and from_section.classifier.out_features == 3
    assert all(torch.equal(a, b) for a, b in zip(from_section.state_dict().values(), from_dict.state_dict().values()))
