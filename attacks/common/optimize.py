"""The optimisation engine of the gradient-matching attacks: :func:`minimise` fits a dummy's
variables to an objective under a :class:`Schedule`.

One loop for every attack: Adam (optionally on signed gradients, with step decay, as Inverting
Gradients) or L-BFGS (as DLG and iDLG); the dummy's projection after every step (a box, GLG's
[0, 1] adjacency); ``restarts`` fresh draws of the dummy with the best kept; an early stop when
the objective stalls; a divergence guard; the attack's time budget, checked at every objective
evaluation; progress reported per step. Following breaching, a run keeps the variables with the
lowest finite objective seen and stops when the objective becomes non-finite, so a diverging run
returns its best candidate rather than NaN.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Generic, Protocol, Sequence, TypeVar

import torch
from torch import Tensor

from attacks.base import AttackContext

OPTIMIZERS = ("adam", "lbfgs")


class Dummy(Protocol):
    def variables(self) -> list[Tensor]: ...

    def project(self) -> None: ...


D = TypeVar("D", bound=Dummy)


@dataclass(frozen=True)
class Schedule:
    """How the variables are fitted. The defaults change nothing a paper did: no restart, no early
    stop, no divergence guard.

    ``signed``/``milestones``: Adam on ``sign(grad)``, decayed x0.1 at these fractions of the
    budget (Inverting Gradients). ``max_iter``/``line_search``: L-BFGS's inner evaluations per
    step and ``"strong_wolfe"`` line search. ``patience``: stop after this many steps in which the
    best objective did not fall by a fraction ``min_improvement``. ``divergence``: stop when the
    objective exceeds this multiple of the best so far (L-BFGS's runaway steps; for objectives
    that stay positive, such as the L2 distance); with it L-BFGS also records its best candidate at every
    objective evaluation, where the loss was measured. Without it the best is recorded after each
    step, as breaching does: the step's starting loss with the variables the step moved to, which
    can keep a runaway step's variables."""

    optimizer: str = "adam"
    iterations: int = 100
    lr: float = 0.1
    signed: bool = False
    milestones: tuple[float, ...] = ()
    max_iter: int = 20
    line_search: str | None = None
    restarts: int = 1
    patience: int = 0
    min_improvement: float = 1e-4
    divergence: float = math.inf

    def __post_init__(self) -> None:
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"unknown optimizer '{self.optimizer}'; valid: {', '.join(OPTIMIZERS)}")
        if self.iterations < 1 or self.restarts < 1:
            raise ValueError("iterations and restarts must be >= 1")


@dataclass
class Fit(Generic[D]):
    """The dummy at its best iterate, that objective, and why the best run stopped (``budget``: all
    its iterations; ``early_stop``, ``diverged`` or ``non_finite``)."""

    dummy: D
    objective: float
    stopped: str


class _Best:
    def __init__(self, variables: Sequence[Tensor]) -> None:
        self.variables = variables
        self.loss = math.inf
        self.state = [v.detach().clone() for v in variables]
        self.stalled = 0

    def offer(self, loss: float, min_improvement: float = 0.0) -> None:
        improved = math.isfinite(loss) and loss < self.loss
        self.stalled = 0 if improved and loss < self.loss - min_improvement * abs(self.loss) else self.stalled + 1
        if improved:
            self.loss = loss
            self.state = [v.detach().clone() for v in self.variables]

    def restore(self) -> float:
        with torch.no_grad():
            for v, s in zip(self.variables, self.state):
                v.copy_(s)
        return self.loss


def _set_grads(loss: Tensor, variables: Sequence[Tensor]) -> None:
    grads = torch.autograd.grad(loss, variables, allow_unused=True)
    for v, g in zip(variables, grads):
        v.grad = torch.zeros_like(v) if g is None else g


def _stop(best: _Best, loss: float, s: Schedule) -> str | None:
    if not math.isfinite(loss):
        return "non_finite"
    if math.isfinite(s.divergence) and loss > s.divergence * best.loss:
        return "diverged"
    if s.patience and best.stalled >= s.patience:
        return "early_stop"
    return None


def _lbfgs(dummy: Dummy, objective: Callable[[], Tensor], ctx: AttackContext, s: Schedule,
           report: Callable[[int], None]) -> tuple[float, str]:
    variables = dummy.variables()
    opt = torch.optim.LBFGS(variables, lr=s.lr, max_iter=s.max_iter, line_search_fn=s.line_search)
    best = _Best(variables)
    guarded = math.isfinite(s.divergence)
    evaluated = _Best(variables)

    def closure():
        ctx.budget.check()
        opt.zero_grad()
        loss = objective()
        if guarded:
            evaluated.offer(loss.item())
        _set_grads(loss, variables)
        return loss

    stopped = "budget"
    for step in range(s.iterations):
        loss = opt.step(closure).item()
        dummy.project()
        best.offer(loss, s.min_improvement)
        report(step + 1)
        stopped = _stop(best, loss, s) or stopped
        if stopped != "budget":
            break
    return (evaluated if guarded else best).restore(), stopped


def _adam(dummy: Dummy, objective: Callable[[], Tensor], ctx: AttackContext, s: Schedule,
          report: Callable[[int], None]) -> tuple[float, str]:
    variables = dummy.variables()
    opt = torch.optim.Adam(variables, lr=s.lr)
    decay = sorted({int(m * s.iterations) for m in s.milestones})
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=decay, gamma=0.1)
    best = _Best(variables)
    stopped = "budget"
    for step in range(s.iterations):
        ctx.budget.check()
        opt.zero_grad()
        loss = objective()
        value = loss.item()
        best.offer(value, s.min_improvement)
        stopped = _stop(best, value, s) or stopped
        if stopped != "budget":
            break
        _set_grads(loss, variables)
        if s.signed:
            for v in variables:
                v.grad.sign_()
        opt.step()
        sched.step()
        dummy.project()
        report(step + 1)
    if stopped == "budget":
        best.offer(objective().item())  # the final iterate was never scored inside the loop
    return best.restore(), stopped


def minimise(draw: Callable[[torch.Generator], D], objective: Callable[[D], Tensor], ctx: AttackContext,
             schedule: Schedule, gen: torch.Generator) -> Fit[D]:
    """Fit ``schedule.restarts`` dummies, each ``draw(gen)`` in turn, to ``objective(dummy)``;
    return the one with the lowest objective, at its best iterate."""
    loop = _adam if schedule.optimizer == "adam" else _lbfgs
    total = schedule.iterations * schedule.restarts
    fits: list[Fit[D]] = []
    for r in range(schedule.restarts):
        dummy = draw(gen)
        loss, stopped = loop(dummy, lambda: objective(dummy), ctx, schedule,
                             lambda done: ctx.progress(r * schedule.iterations + done, total))
        fits.append(Fit(dummy, loss, stopped))
    return min(fits, key=lambda f: f.objective if math.isfinite(f.objective) else math.inf)
