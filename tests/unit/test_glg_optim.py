"""GLG's optimisation attack on graph classification (attacks/glg/optim.py) and the engine pieces
it adds (attacks/common/regularisers.py, the projected adjacency)."""

import pytest
import torch
from torch_geometric.utils import dense_to_sparse

from attacks.base import AttackContext, Budget
from attacks.common.parametrisations import mirrored, project_unit_interval
from attacks.common.regularisers import DEGREE_EPS, feature_smoothness, frobenius
from attacks.glg.optim import invert_graph, thresholded
from fedgraph_sim.metrics.ranking import roc_auc
from fedgraph_sim.models import GraphClassifier


def random_graph(n, d, seed, p=0.3):
    gen = torch.Generator().manual_seed(seed)
    upper = torch.triu((torch.rand(n, n, generator=gen) < p).float(), diagonal=1)
    return upper + upper.t(), torch.randn(n, d, generator=gen)


def observed_gradient(model, x, a, label):
    edge_index, _ = dense_to_sparse(a)
    loss = torch.nn.functional.cross_entropy(model(x, edge_index), torch.tensor([label]))
    return {n: g.detach() for (n, _), g in zip(model.named_parameters(),
                                                torch.autograd.grad(loss, list(model.parameters())))}


def victim(conv, d, n):
    torch.manual_seed(0)
    return GraphClassifier(d, 2, conv=conv, activation="sigmoid", hidden=100, pool="flatten", flatten_nodes=n)


def upper_auc(prob, truth):
    iu = torch.triu_indices(truth.size(0), truth.size(0), offset=1)
    return roc_auc(truth[iu[0], iu[1]].numpy(), prob[iu[0], iu[1]].numpy())


def test_smoothness_equals_its_edge_sum_identity():
    a, x = random_graph(7, 4, seed=0, p=0.5)
    a = a * torch.rand(7, 7, generator=torch.Generator().manual_seed(1))  # soft weights too
    a = (a + a.t()) / 2
    d = a.sum(1) + DEGREE_EPS
    y = x / d.sqrt().unsqueeze(1)
    identity = 0.5 * sum(a[i, j] * ((y[i] - y[j]) ** 2).sum() for i in range(7) for j in range(7))
    # with y_i = x_i / sqrt(d_i) and d_i = deg_i + eps: tr(X^T L X) = sum_i d_i ||y_i||^2
    # - sum_ij A_ij y_i.y_j, the edge sum plus the epsilon's share eps * sum_i ||y_i||^2
    assert torch.allclose(feature_smoothness(x, a), identity + DEGREE_EPS * (y * y).sum(), atol=1e-5)
    assert frobenius(a) == pytest.approx(float((a * a).sum()))


def test_projection_keeps_the_adjacency_in_the_unit_interval_and_symmetric():
    upper = torch.tensor([-0.5, 0.3, 1.7, 0.9, -2.0, 0.5], requires_grad=True)
    project_unit_interval(upper)
    a = mirrored(upper, 4)
    assert a.min() >= 0 and a.max() <= 1
    assert torch.equal(a, a.t()) and torch.equal(a.diagonal(), torch.zeros(4))
    assert upper.tolist() == pytest.approx([0.0, 0.3, 1.0, 0.9, 0.0, 0.5])


@pytest.mark.parametrize("symmetric", [False, True])
def test_graph_a_with_sage_recovers_a_ten_node_random_graph(symmetric):
    """A smoke test: X known (D = 32), A from the gradient, AUC > 0.95 in 500 steps, with
    the paper's plain matrix and with the mirrored upper triangle."""
    a, x = random_graph(10, 32, seed=2)
    model = victim("sage", 32, 10)
    observed = observed_gradient(model, x, a, label=1)
    ctx = AttackContext(seed=0, budget=Budget(120))
    result = invert_graph(model, observed, 10, 1, ctx, x=x, iterations=500, symmetric=symmetric)
    assert upper_auc(result.adj_prob, a) > 0.95
    assert result.adj_prob.diagonal().abs().sum() == 0
    assert torch.equal(result.adj_prob, result.adj_prob.t()) and result.adj_prob.min() >= 0
    assert set(result.adj_sample.unique().tolist()) <= {0.0, 1.0}


def test_graph_b_feature_recovery_is_far_better_with_sage_than_with_gcn():
    """GLG's finding (Table 6): the root weight gives GraphSAGE's features away."""
    a, x = random_graph(10, 32, seed=3)
    errors = {}
    for conv in ("sage", "gcn"):
        model = victim(conv, 32, 10)
        observed = observed_gradient(model, x, a, label=0)
        result = invert_graph(model, observed, 10, 0, AttackContext(seed=0, budget=Budget(120)), adj=a,
                              iterations=500, lr=0.1)
        errors[conv] = float(((result.x - x).norm(dim=1) / x.norm(dim=1)).mean())  # RNMSE
    assert errors["sage"] < 0.5 * errors["gcn"], errors


def test_nothing_to_recover_is_refused():
    a, x = random_graph(4, 3, seed=4)
    with pytest.raises(ValueError, match="both X and A are known"):
        invert_graph(victim("sage", 3, 4), {}, 4, 0, AttackContext(seed=0, budget=Budget(5)), x=x, adj=a)


def test_thresholding_min_max_normalises_the_off_diagonal_entries():
    adj = torch.tensor([[0.9, 0.2, 0.6], [0.2, 0.0, 0.4], [0.6, 0.4, 0.7]])  # off-diagonal 0.2 .. 0.6
    assert thresholded(adj, 0.45).tolist() == [[0, 0, 1], [0, 0, 1], [1, 1, 0]]  # 0.4 -> 0.5, kept
    assert thresholded(adj, 0.8).tolist() == [[0, 0, 1], [0, 0, 0], [1, 0, 0]]
    assert thresholded(torch.zeros(3, 3), 0.5).sum() == 0
