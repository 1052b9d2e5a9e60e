"""FedGIG's adjacency-matrix constraining module (attacks/fedgig/constraint.py)."""

import pytest
import torch

from attacks.fedgig.constraint import ConstrainedAdjacency, budget, constrain


def theta(n=8, seed=0):
    return torch.randn(n, n, generator=torch.Generator().manual_seed(seed)).requires_grad_()


def test_the_budget_contracts_from_n_minus_one_to_n_max():
    assert [budget(t, 10, 4, 0.15) for t in (0, 1, 20, 33, 34, 1000)] == [9, 9, 6, 5, 4, 4]
    assert budget(1000, 3, 4, 0.15) == 2  # never more than N - 1


@pytest.mark.parametrize("symmetrise", ["union", "intersection"])
@pytest.mark.parametrize("t", [0, 10, 1000])
def test_the_constrained_graph_is_binary_symmetric_loop_free(symmetrise, t):
    a, p = constrain(theta(), t, symmetrise=symmetrise)
    assert set(a.detach().unique().tolist()) <= {0.0, 1.0}
    assert torch.equal(a, a.t()) and a.diagonal().abs().sum() == 0
    assert torch.equal(p, p.t()) and p.diagonal().abs().sum() == 0 and (p >= 0).all() and (p <= 1).all()
    if symmetrise == "intersection":
        assert (a.sum(1) <= budget(t, 8, 4, 0.15)).all()


def test_the_degree_cap_holds_at_the_end_of_the_schedule():
    a, _ = constrain(theta(12, seed=3), 10_000, n_max=3, symmetrise="intersection")
    assert a.sum(1).max() <= 3


def test_the_threshold_decides_which_kept_entries_become_edges():
    t = torch.zeros(4, 4)
    t[0, 1] = t[1, 0] = 4.0  # P = 0.98
    t[2, 3] = t[3, 2] = -4.0  # P = 0.02
    a, _ = constrain(t.requires_grad_(), 0, beta=0.5)
    assert a[0, 1] == 1 and a[2, 3] == 0 and a[0, 2] == 1  # sigmoid(0) = 0.5 >= beta


def test_the_straight_through_estimator_passes_a_gradient_to_theta():
    th = theta()
    a, _ = constrain(th, 0)
    (a * torch.arange(64.0).view(8, 8)).sum().backward()
    assert th.grad is not None and th.grad.abs().sum() > 0
    full = theta()
    b, _ = constrain(full, 1000, n_max=1, ste_scope="full")
    (b * torch.arange(64.0).view(8, 8)).sum().backward()
    masked = theta()
    c, _ = constrain(masked, 1000, n_max=1, ste_scope="masked")
    (c * torch.arange(64.0).view(8, 8)).sum().backward()
    assert (full.grad != 0).sum() > (masked.grad != 0).sum()  # pruned pairs get a gradient only in full


def test_the_parametrisation_advances_its_schedule_once_per_step():
    part = ConstrainedAdjacency(6, torch.Generator().manual_seed(0), n_max=1, alpha=1.0, symmetrise="intersection")
    assert part.value().sum(1).max() <= 5
    for _ in range(10):
        part.project()
    assert part.step == 10 and part.value().sum(1).max() <= 1
    assert torch.equal(part.edge_scores(), constrain(part.theta, 10)[1])


def test_without_the_estimator_the_model_sees_the_continuous_top_k_probabilities():
    th = theta()
    a, p = constrain(th, 1000, n_max=2, symmetrise="intersection", ste=False)
    kept = a != 0
    assert torch.equal(a[kept], p[kept]) and (a.sum(1) > 0).any() and (kept.sum(1) <= 2).all()
    (a * torch.arange(64.0).view(8, 8)).sum().backward()
    assert (th.grad != 0).any()
