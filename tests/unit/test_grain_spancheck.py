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


def test_noisy_gradients_leave_true_rows_the_predicted_residual():
    """A rank-6 gradient plus Gaussian noise: singular values of noise alone are not counted, and
    a true row's residual is what the first-order turn of the kept directions predicts."""
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(6, 40, generator=gen, dtype=torch.float64)  # the input rows
    d = torch.randn(6, 80, generator=gen, dtype=torch.float64) * torch.logspace(0, -3, 6, dtype=torch.float64)[:, None]
    noise = 1e-6
    grad = d.T @ x + noise * torch.randn(80, 40, generator=gen, dtype=torch.float64)
    space = RowSpace(grad, tol=1e-12, noise=noise)
    assert RowSpace(grad, tol=1e-12).rank == 40 and space.rank == 6
    unit = x / x.norm(dim=1, keepdim=True)
    coords = unit @ space.basis.T
    residual = (unit - coords @ space.basis).norm(dim=1)
    rho = (space.slack(coords) / 40 ** 0.5) / 2  # slack = sqrt(d_in) (drift + 2 rho), drift 0
    assert ((residual / rho > 0.3) & (residual / rho < 2.0)).all()
    assert (space.distance(x) < 0).all()  # within their slack
    others = torch.randn(100, 40, generator=gen, dtype=torch.float64)
    assert (space.distance(others) > 1.0).all()
    assert RowSpace(d.T @ x, tol=1e-12).slack(coords) == 0.0  # a clean gradient: the paper's check


def test_passing_rows_come_ranked_by_residual_not_by_their_allowance():
    """With a perturbation the allowance (slack) grows with a row's weight on weak directions:
    a row passes when its residual less its slack is below tau, and comes back with its residual,
    so an allowance never ranks a row above one that fits better."""
    gen = torch.Generator().manual_seed(0)
    rows = torch.randn(6, 40, generator=gen, dtype=torch.float64)
    scales = torch.tensor([10.0, 8.0, 6.0, 1.0, 0.3, 0.1], dtype=torch.float64)[:, None]  # weak directions last
    grad = torch.randn(30, 6, generator=gen, dtype=torch.float64) @ (scales * rows)
    space = RowSpace(grad, tol=1e-7, noise=1e-3, drift=1e-3)
    z = torch.cat([rows, torch.randn(50, 40, generator=gen, dtype=torch.float64)])
    residual, slack = space.residual(z)
    assert torch.equal(space.distance(z), residual - slack) and slack.std() > 0
    tau = 0.5
    index, values = space.passing(z, tau)
    assert index.tolist() == torch.nonzero(residual - slack < tau).flatten().tolist()
    assert set(range(6)) <= set(index.tolist())
    # the passing rows' residuals are recomputed on their own: equal up to the last bits of a true
    # row's residual (about 1e-14 here; the machine's BLAS decides them)
    assert torch.allclose(values, residual[index], rtol=1e-9, atol=1e-12)
    assert RowSpace(grad, tol=1e-7).residual(z)[1].abs().max() == 0  # paper mode: no allowance


def test_the_coordinate_screen_keeps_every_passing_row_and_drops_random_ones():
    """Rows of a rank-20 span in 300 dimensions, nudged to residuals around the threshold, and
    random rows: every row that passes the full check survives the screen on 52 coordinates (given
    a bound on its norm twice too large, as the sum of its terms' norms is), and random ones do
    not."""
    from attacks.grain.spancheck import CoordinateScreen

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(20, 300, generator=gen, dtype=torch.float64)
    space = RowSpace(torch.randn(64, 20, generator=gen, dtype=torch.float64) @ x, tol=1e-7)
    screen = CoordinateScreen(space)
    assert screen.usable and screen.index.numel() == 52 and screen.index.unique().numel() == 52
    inside = torch.randn(500, 20, generator=gen, dtype=torch.float64) @ x
    nudged = inside + torch.logspace(-4, 0, 500, dtype=torch.float64)[:, None] * inside.norm(dim=1, keepdim=True) \
        * torch.randn(500, 300, generator=gen, dtype=torch.float64) / 300 ** 0.5
    tau = 1e-2
    passing = space.distance(nudged) < tau
    assert 50 < passing.sum() < 450  # rows on both sides of the threshold
    bound = 2 * nudged.norm(dim=1)
    kept = torch.zeros(500, dtype=torch.bool)
    kept[screen.plausible(nudged[:, screen.index].float(), bound.float(), tau)] = True
    assert kept[passing].all()
    others = torch.randn(1000, 300, generator=gen, dtype=torch.float64)
    assert screen.plausible(others[:, screen.index].float(), 2 * others.norm(dim=1).float(), tau).numel() == 0
    assert not CoordinateScreen(RowSpace(torch.randn(300, 300, generator=gen), tol=1e-7)).usable  # saturated
    assert not CoordinateScreen(RowSpace(x[:5] * 1.0, tol=1e-7, noise=1e-6)).usable  # a perturbed update


def test_under_an_allowance_the_float32_screen_keeps_every_passing_row_and_drops_far_ones():
    """A perturbed update (noise and drift, as a FedAvg epoch's) whose weakest kept directions sit
    near the noise's floor: rows on them get allowances so large that the L2 test passes them
    even far outside the span, so the screen tests the L1 residual in float32. Rows nudged to
    distances on both sides of the threshold all survive it when they pass in float64; rows mostly
    on a weak direction with a large residual are dropped."""
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(40, 300, generator=gen, dtype=torch.float64)
    strength = torch.logspace(0, -2, 40, dtype=torch.float64)[:, None]
    noise = 1e-2
    grad = torch.randn(300, 40, generator=gen, dtype=torch.float64) @ (strength * x)
    space = RowSpace(grad + noise * torch.randn(300, 300, generator=gen, dtype=torch.float64), tol=1e-7,
                     noise=noise, drift=1e-3)
    assert space.rank == 40 and space.turn.max() > 0.04  # every direction kept, the weakest near the floor
    inside = torch.randn(2000, 40, generator=gen, dtype=torch.float64) @ x
    nudged = inside + torch.logspace(-3, 0, 2000, dtype=torch.float64)[:, None] \
        * inside.norm(dim=1, keepdim=True) * torch.randn(2000, 300, generator=gen, dtype=torch.float64) / 300 ** 0.5
    tau = 1e-2
    passing = space.distance(nudged) < tau
    assert 200 < passing.sum() < 1800  # rows on both sides of the threshold
    kept = torch.zeros(2000, dtype=torch.bool)
    kept[space.plausible(nudged, tau)] = True
    assert kept[passing].all()
    index, _ = space.passing(nudged, tau)
    assert index.tolist() == torch.nonzero(passing).flatten().tolist()

    outside = torch.randn(500, 300, generator=gen, dtype=torch.float64)
    outside -= (outside @ space.basis.T) @ space.basis
    far = 0.8 * space.basis[-1] + 0.6 * outside / outside.norm(dim=1, keepdim=True)
    coords = far @ space.basis.T
    assert ((1 - coords.pow(2).sum(1)) < (2 * (tau + space.slack(coords))) ** 2).all()  # the L2 test passes them
    assert (space.distance(far) > 1.0).all()
    assert space.plausible(far, tau).numel() == 0
