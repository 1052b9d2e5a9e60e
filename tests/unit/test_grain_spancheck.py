import torch

from attacks.grain.spancheck import RowSpace
from tests.unit.grain_cases import molecule, observed


def test_true_rows_pass_and_random_rows_fail():
    update, _ = observed("CC(=O)Oc1ccccc1C(=O)O")
    g, _ = molecule("CC(=O)Oc1ccccc1C(=O)O")
    space = RowSpace(update.gradient["convs.0.lin.weight"], tol=1e-7)
    assert space.rank == torch.linalg.matrix_rank(g.x.double()).item()  # the rank of X: duplicate atoms
    assert space.distance(g.x).max() < 1e-4
    random_rows = torch.randn(200, 140, generator=torch.Generator().manual_seed(0))
    assert space.distance(random_rows).min() > 1.0


def test_residual_is_l1_of_the_unit_candidate_and_zero_rows_fail():
    basis = torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    space = RowSpace(basis * 3, tol=1e-9)
    d = space.distance(torch.tensor([[3.0, 4.0, 0.0], [0.0, 0.0, 2.0], [1.0, 1.0, 1.0], [0.0, 0.0, 0.0]]))
    assert d[0] == 0 and d[1] == 1.0
    assert torch.isclose(d[2], torch.tensor(1 / 3 ** 0.5, dtype=torch.float64))
    assert torch.isinf(d[3])
    assert space.rank == 2 and not space.saturated
    assert RowSpace(torch.eye(3), tol=1e-9).saturated
