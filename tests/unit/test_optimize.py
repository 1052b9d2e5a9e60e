"""The optimisation engine (attacks/common/optimize.py): best-iterate tracking, restarts, early
stop, the divergence guard, non-finite objectives, projection, the time budget and progress."""

import math

import pytest
import torch

from attacks.base import AttackContext, AttackTimeout, Budget
from attacks.common.optimize import Schedule, minimise


class Point:
    """One free vector, optionally boxed into [-1, 1] after every step."""

    def __init__(self, gen, boxed=False):
        self.v = (torch.randn(3, generator=gen) * 3).requires_grad_()
        self.boxed = boxed

    def variables(self):
        return [self.v]

    def project(self):
        if self.boxed:
            with torch.no_grad():
                self.v.clamp_(-1, 1)


TARGET = torch.tensor([0.5, -2.0, 1.0])


def quadratic(p):
    return ((p.v - TARGET) ** 2).sum()


def ctx(seconds=60, progress=None):
    return AttackContext(seed=0, budget=Budget(seconds), progress=progress or (lambda done, total: None))


@pytest.mark.parametrize("optimizer", ["adam", "lbfgs"])
def test_minimise_reaches_the_minimum_of_a_quadratic(optimizer):
    schedule = Schedule(optimizer=optimizer, iterations=300 if optimizer == "adam" else 20,
                        lr=0.1 if optimizer == "adam" else 1.0)
    fit = minimise(Point, quadratic, ctx(), schedule, torch.Generator().manual_seed(0))
    assert torch.allclose(fit.dummy.v.detach(), TARGET, atol=1e-2)
    assert fit.stopped == "budget"


def test_adam_returns_the_best_iterate_with_its_objective():
    fit = minimise(Point, quadratic, ctx(), Schedule(iterations=40, lr=0.5), torch.Generator().manual_seed(1))
    assert fit.objective == pytest.approx(float(quadratic(fit.dummy).detach()), rel=1e-6)


def test_projection_is_applied_after_every_step():
    seen = []

    def watched(p):
        seen.append(p.v.detach().abs().max().item())
        return quadratic(p)

    fit = minimise(lambda gen: Point(gen, boxed=True), watched, ctx(), Schedule(iterations=30, lr=0.5),
                   torch.Generator().manual_seed(0))
    assert max(seen[1:]) <= 1.0 and fit.dummy.v.detach()[1] == pytest.approx(-1.0)


def test_restarts_keep_the_best_draw_and_report_progress_over_all_of_them():
    reports = []
    one = minimise(Point, quadratic, ctx(), Schedule(iterations=3, lr=0.01), torch.Generator().manual_seed(0))
    many = minimise(Point, quadratic, ctx(progress=lambda done, total: reports.append((done, total))),
                    Schedule(iterations=3, lr=0.01, restarts=4), torch.Generator().manual_seed(0))
    assert many.objective <= one.objective  # the first draw is the single run's
    assert reports[-1] == (12, 12) and len(reports) == 12


def test_an_objective_below_zero_runs_its_whole_budget():
    """A cosine distance reaches -1e-8 in float32 at an exact match: no guard may mistake that."""
    steps = []
    fit = minimise(Point, lambda p: quadratic(p) - 100.0, ctx(progress=lambda done, total: steps.append(done)),
                   Schedule(iterations=50, lr=0.1), torch.Generator().manual_seed(0))
    assert fit.stopped == "budget" and len(steps) == 50 and fit.objective < 0


def test_early_stop_ends_a_stalled_run():
    steps = []
    flat = lambda p: (p.v * 0).sum() + 1.0  # noqa: E731
    fit = minimise(Point, flat, ctx(progress=lambda done, total: steps.append(done)),
                   Schedule(iterations=100, patience=5), torch.Generator().manual_seed(0))
    assert fit.stopped == "early_stop" and len(steps) < 10


def test_a_non_finite_objective_stops_the_run_and_the_best_finite_iterate_is_kept():
    calls = []

    def breaks(p):
        calls.append(1)
        value = quadratic(p)
        return value * math.nan if len(calls) > 5 else value

    fit = minimise(Point, breaks, ctx(), Schedule(iterations=50, lr=0.1), torch.Generator().manual_seed(0))
    assert fit.stopped == "non_finite" and math.isfinite(fit.objective)


def test_the_divergence_guard_stops_a_runaway_lbfgs_and_keeps_its_best_evaluated_point():
    evaluations = []

    def runaway(p):  # the objective grows with every evaluation once it has been small
        evaluations.append(1)
        return quadratic(p) + (0.0 if len(evaluations) < 4 else 10.0 ** len(evaluations))

    unguarded = minimise(Point, runaway, ctx(), Schedule(optimizer="lbfgs", iterations=10, lr=1.0, max_iter=2),
                         torch.Generator().manual_seed(0))
    evaluations.clear()
    guarded = minimise(Point, runaway, ctx(), Schedule(optimizer="lbfgs", iterations=10, lr=1.0, max_iter=2,
                                                       divergence=10.0), torch.Generator().manual_seed(0))
    assert unguarded.stopped == "budget" and guarded.stopped == "diverged"
    assert guarded.objective == pytest.approx(float(quadratic(guarded.dummy).detach()))  # where it was measured


def test_the_time_budget_interrupts_the_run():
    with pytest.raises(AttackTimeout):
        minimise(Point, quadratic, ctx(seconds=0), Schedule(iterations=5), torch.Generator().manual_seed(0))


def test_bad_schedules_are_refused():
    with pytest.raises(ValueError, match="optimizer"):
        Schedule(optimizer="sgd")
    with pytest.raises(ValueError, match="restarts"):
        Schedule(restarts=0)
