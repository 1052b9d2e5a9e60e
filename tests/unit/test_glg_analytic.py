"""GLG's closed-form results (attacks/glg/analytic.py), in float64: pseudo-inverses are
ill-conditioned in float32."""

import pytest
import torch
from torch_geometric.nn import GCNConv, SAGEConv
from torch_geometric.utils import dense_to_sparse

from attacks.glg.analytic import (adjacency_from_aggregates, edges, features_from_aggregates, rank_conditions,
                                  row_ratio, sage_graph_adjacency)
from fedgraph_sim.models import GraphClassifier

ce = torch.nn.functional.cross_entropy


def random_graph(n, d, seed=0, p=0.4):
    gen = torch.Generator().manual_seed(seed)
    upper = torch.triu((torch.rand(n, n, generator=gen) < p).double(), diagonal=1)
    a = upper + upper.t()
    a[0, 1] = a[1, 0] = 1.0  # node 0 has a neighbour
    return a, torch.randn(n, d, generator=gen, dtype=torch.float64)


def gcn_norm(a):
    a_hat = a + torch.eye(a.size(0), dtype=a.dtype)
    d = a_hat.sum(1).pow(-0.5)
    return d[:, None] * a_hat * d[None, :]


def sage_norm(a):
    return a / a.sum(1, keepdim=True).clamp(min=1)


def grads(loss, params):
    return torch.autograd.grad(loss, params, retain_graph=True)


def test_props_1_and_2_are_exact_on_a_one_layer_sage():
    a, x = random_graph(8, 12)
    edge_index, _ = dense_to_sparse(a)
    torch.manual_seed(0)
    conv = SAGEConv(12, 3, aggr="mean").double()
    v = 0
    loss = ce(conv(x, edge_index)[v:v + 1], torch.tensor([2]))
    g_neighbour, g_bias, g_root = grads(loss, [conv.lin_l.weight, conv.lin_l.bias, conv.lin_r.weight])
    aggregate, own = row_ratio(g_neighbour, g_bias), row_ratio(g_root, g_bias)
    torch.testing.assert_close(aggregate.value, (sage_norm(a) @ x)[v], atol=1e-10, rtol=0)
    torch.testing.assert_close(own.value, x[v], atol=1e-10, rtol=0)
    assert aggregate.residual < 1e-12 and own.residual < 1e-12


def test_prop_1_is_not_exact_in_the_first_layer_of_a_two_layer_gcn():
    """The paper's caveat: the first layer's gradient mixes the neighbours' aggregates; the last
    layer's is exact."""
    a, x = random_graph(8, 12, seed=1)
    edge_index, _ = dense_to_sparse(a)
    torch.manual_seed(1)
    first, last = GCNConv(12, 16).double(), GCNConv(16, 3).double()
    h = torch.sigmoid(first(x, edge_index))
    v = 0
    loss = ce(last(h, edge_index)[v:v + 1], torch.tensor([1]))
    g1w, g1b, g2w, g2b = grads(loss, [first.lin.weight, first.bias, last.lin.weight, last.bias])
    exact = row_ratio(g2w, g2b)
    torch.testing.assert_close(exact.value, (gcn_norm(a) @ h)[v].detach(), atol=1e-10, rtol=0)
    assert exact.residual < 1e-12
    mixed = row_ratio(g1w, g1b)
    assert mixed.residual > 1e-3  # exact forms sit at ~1e-16
    assert not torch.allclose(mixed.value, (gcn_norm(a) @ x)[v], atol=1e-2)


def per_node_aggregates(conv, x, edge_index, labels):
    """Prop. 1 node by node on a one-layer GCN (Node-2: one gradient per node's loss)."""
    out = conv(x, edge_index)
    rows = []
    for u in range(x.size(0)):
        gw, gb = grads(ce(out[u:u + 1], labels[u:u + 1]), [conv.lin.weight, conv.bias])
        rows.append(row_ratio(gw, gb).value)
    return torch.stack(rows)


def test_props_3_and_4_recover_a_gcn_adjacency_and_features_node_by_node():
    n, d = 8, 12  # N <= D: X has full row rank
    a, x = random_graph(n, d, seed=5)  # and A + I is non-singular
    edge_index, _ = dense_to_sparse(a)
    torch.manual_seed(2)
    conv = GCNConv(d, 3).double()
    aggregates = per_node_aggregates(conv, x, edge_index, torch.arange(n) % 3)
    assert rank_conditions(x, a_tilde=gcn_norm(a)) == {"nodes": 8, "feature_dim": 12, "rank_x": 8,
                                                       "x_full_row_rank": True, "rank_a": 8,
                                                       "a_full_column_rank": True}
    a_tilde = adjacency_from_aggregates(aggregates, x)  # Node-2a: X known
    torch.testing.assert_close(a_tilde, gcn_norm(a), atol=1e-8, rtol=0)
    torch.testing.assert_close(edges(a_tilde), a)
    torch.testing.assert_close(features_from_aggregates(gcn_norm(a), aggregates), x, atol=1e-8, rtol=0)  # Node-2b


def test_prop_4_needs_a_non_singular_a_tilde_and_the_check_says_so():
    a, x = random_graph(8, 12, seed=2)  # A + I singular here
    assert rank_conditions(a_tilde=gcn_norm(a)) == {"rank_a": 7, "a_full_column_rank": False}
    aggregates = gcn_norm(a) @ x
    assert not torch.allclose(features_from_aggregates(gcn_norm(a), aggregates), x, atol=1e-2)


def test_prop_6_recovers_the_adjacency_through_a_two_layer_sage_with_the_flatten_readout():
    n, d, f = 8, 20, 30  # N <= D and N <= F
    a, x = random_graph(n, d, seed=3)
    edge_index, _ = dense_to_sparse(a)
    torch.manual_seed(3)
    model = GraphClassifier(d, 2, conv="sage", activation="sigmoid", hidden=f, pool="flatten",
                            flatten_nodes=n).double()
    loss = ce(model(x, edge_index), torch.tensor([1]))
    g_neighbour, g_root = grads(loss, [model.convs[0].lin_l.weight, model.convs[0].lin_r.weight])
    checks = rank_conditions(x, g_root)
    assert checks["x_full_row_rank"] and checks["gradient_full_row_rank"]
    a_tilde = sage_graph_adjacency(x, g_neighbour, g_root)
    torch.testing.assert_close(a_tilde, sage_norm(a), atol=1e-8, rtol=0)
    torch.testing.assert_close(edges(a_tilde), a)


def test_prop_6_fails_where_x_lacks_full_row_rank_as_on_mutag():
    """MUTAG's one-hot 7-dim node types: N > D, so X^+ X != I and Prop. 6 cannot be exact."""
    n, d = 12, 7
    a, _ = random_graph(n, d, seed=4)
    x = torch.nn.functional.one_hot(torch.arange(n) % d, d).double()
    edge_index, _ = dense_to_sparse(a)
    torch.manual_seed(4)
    model = GraphClassifier(d, 2, conv="sage", activation="sigmoid", hidden=30, pool="flatten",
                            flatten_nodes=n).double()
    loss = ce(model(x, edge_index), torch.tensor([0]))
    g_neighbour, g_root = grads(loss, [model.convs[0].lin_l.weight, model.convs[0].lin_r.weight])
    checks = rank_conditions(x, g_root)
    assert checks == {"nodes": 12, "feature_dim": 7, "rank_x": 7, "x_full_row_rank": False, "rank_grad_root": 7,
                      "gradient_full_row_rank": False}
    assert not torch.allclose(sage_graph_adjacency(x, g_neighbour, g_root), sage_norm(a), atol=1e-2)


def test_a_zero_bias_gradient_carries_no_ratio():
    with pytest.raises(ValueError, match="bias gradient is zero"):
        row_ratio(torch.ones(3, 4, dtype=torch.float64), torch.zeros(3, dtype=torch.float64))
