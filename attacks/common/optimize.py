"""Optimisation loops with iteration budgets, time budgets, progress and best-candidate tracking.

Following breaching, a loop keeps the variables with the lowest finite objective seen and stops
early when the objective becomes non-finite, so a diverging run returns its best candidate rather
than NaN. The time budget is checked at every objective evaluation.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import torch
from torch import Tensor

from attacks.base import AttackContext


class _Best:
    def __init__(self, variables: Sequence[Tensor]) -> None:
        self.variables = variables
        self.loss = math.inf
        self.state = [v.detach().clone() for v in variables]

    def offer(self, loss: float) -> None:
        if math.isfinite(loss) and loss < self.loss:
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


def lbfgs(variables: list[Tensor], objective: Callable[[], Tensor], ctx: AttackContext, *,
          iterations: int, lr: float = 1.0, max_iter: int = 20, line_search: str | None = None) -> float:
    """``iterations`` L-BFGS steps (one closure per step, ``max_iter`` inner evaluations);
    ``line_search="strong_wolfe"`` makes every step satisfy the strong Wolfe conditions instead of
    taking ``lr`` times the quasi-Newton direction, the guard against runaway steps."""
    opt = torch.optim.LBFGS(variables, lr=lr, max_iter=max_iter, line_search_fn=line_search)
    best = _Best(variables)

    def closure():
        ctx.budget.check()
        opt.zero_grad()
        loss = objective()
        _set_grads(loss, variables)
        return loss

    for step in range(iterations):
        loss = opt.step(closure).item()
        best.offer(loss)
        ctx.progress(step + 1, iterations)
        if not math.isfinite(loss):
            break
    return best.restore()


def adam(variables: list[Tensor], objective: Callable[[], Tensor], ctx: AttackContext, *,
         iterations: int, lr: float, signed: bool = False,
         milestones: Sequence[float] = (), project: Callable[[], None] | None = None) -> float:
    """Adam with optional signed gradients, step decay x0.1 at the given fractions of the budget,
    and a projection after each step (e.g. boxing features into [0, 1])."""
    opt = torch.optim.Adam(variables, lr=lr)
    steps = sorted({int(m * iterations) for m in milestones})
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=steps, gamma=0.1)
    best = _Best(variables)
    for step in range(iterations):
        ctx.budget.check()
        opt.zero_grad()
        loss = objective()
        value = loss.item()
        best.offer(value)
        if not math.isfinite(value):
            break
        _set_grads(loss, variables)
        if signed:
            for v in variables:
                v.grad.sign_()
        opt.step()
        sched.step()
        if project is not None:
            with torch.no_grad():
                project()
        ctx.progress(step + 1, iterations)
    best.offer(objective().item())  # the final iterate was never scored inside the loop
    return best.restore()
