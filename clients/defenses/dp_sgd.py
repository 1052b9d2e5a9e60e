"""DP-SGD (Abadi et al., "Deep Learning with Differential Privacy", CCS 2016) with per-graph
clipping, the standard DP baseline beside GraphDLG's defenses (Wei et al., arXiv 2601.19745).

Each local step computes every graph's own gradient ``g_i`` (one ``torch.func.vmap`` over the
dense model: Opacus' per-sample hooks would treat node rows as samples and fail on PyG layers),
clips it to L2 norm ``clip`` = C, and returns

.. math:: \\tilde g = \\frac{1}{B}\\Big(\\sum_i g_i \\min(1, C / \\lVert g_i\\rVert) + \\mathcal N(0, (zC)^2 I)\\Big).

Privacy is accounted with Opacus' RDP accountant (``clients.defenses.accounting.epsilon``), per
client across rounds, read as epsilon at ``delta`` (default 1e-5), for what the batches really are
(``train.sampling``):

- ``random``: every local step draws its batch afresh. One ``(z, q = B / N_client)`` sampled
  Gaussian step per local step; the accountant assumes Poisson sampling, and these are
  fixed-size uniform draws: the usual approximation, not a bound.
- ``epoch`` and ``repeat``: the batches walk seeded shuffles of the partition (``repeat`` trains
  each round's one batch at all K local steps). A shuffle is not a Poisson sample and its
  amplification is not what Poisson's accountant gives (Chua et al., "How Private are DP-SGD
  Implementations?", ICML 2024), so none is claimed: a graph's exposure is the adaptive
  composition of the Gaussian steps that used it, each with sensitivity ``d C`` for ``d`` copies
  of it in the batch, which is one Gaussian at noise multiplier

  .. math:: z_{\\mathrm{eff}} = \\Big(\\sum_t (d_t / z_t)^2\\Big)^{-1/2},

  accounted unsampled (``q = 1``) for the most exposed graph. K repeated steps at ``z`` are one
  step at ``z / \\sqrt K``.

With ``target_epsilon`` the noise multiplier z is chosen so the planned rounds x local steps end
at that epsilon (for a shuffle, at the most uses one graph can get: ``ClientTurn.planned_uses``).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Sequence

import torch
from torch import nn
from torch_geometric.data import Data

from clients.defenses.accounting import epsilon
from clients.defenses.base import ClientTurn, Defense, Update, check_number
from fedgraph_sim import registry
from fedgraph_sim.errors import ConfigError
from fedgraph_sim.models.gradients import per_graph_gradients


def noise_for_target(target_epsilon: float, delta: float, sample_rate: float, steps: int) -> float:
    from opacus.accountants.utils import get_noise_multiplier  # lazily, as in accounting.epsilon()

    try:
        return get_noise_multiplier(target_epsilon=target_epsilon, target_delta=delta,
                                    sample_rate=sample_rate, steps=steps, accountant="rdp")
    except ValueError:
        raise ConfigError(f"target_epsilon: {target_epsilon:g} cannot be reached at delta "
                          f"{delta:g} with sample rate {sample_rate:.3g} over {steps} steps "
                          "(no noise multiplier up to 1e6 suffices)") from None


@registry.defenses.register
class DPSGD(Defense):
    name = "dp_sgd"
    stateful = True  # the accountant's history, per client across rounds
    per_graph_pass = True  # vmapped over the dense model: forward hooks do not run
    once_per_stack = True  # one accountant
    tasks = ("graph",)  # clips per-graph gradients

    def __init__(self, clip: float = 1.0, noise_multiplier: float | None = 1.0,
                 target_epsilon: float | None = None, delta: float = 1e-5) -> None:
        self.clip = check_number(clip, "clip", strict=True)
        self.delta = check_number(delta, "delta", strict=True, high=1.0)
        self.target_epsilon = (None if target_epsilon is None
                               else check_number(target_epsilon, "target_epsilon", strict=True))
        self.noise_multiplier = (None if self.target_epsilon is not None
                                 else check_number(noise_multiplier, "noise_multiplier"))
        self.history: list[tuple[float, float, int]] = []  # (z, q, steps) of random draws
        self.exposure: dict[str, float] = {}  # per graph id: sum of (d / z)^2 (a shuffle's walk)
        self.sampling = "random"
        self._z = self.noise_multiplier

    def plan(self, turn: ClientTurn) -> float:
        """The noise multiplier for this client's turn (raises if ``target_epsilon`` is out of reach)."""
        if self.target_epsilon is None:
            return self.noise_multiplier
        if turn.sampling == "random":
            return noise_for_target(self.target_epsilon, self.delta, turn.sample_rate, turn.planned_steps)
        return math.sqrt(turn.planned_uses) * noise_for_target(self.target_epsilon, self.delta, 1.0, 1)

    def begin(self, turn: ClientTurn, state: dict | None) -> None:
        """Start a client's turn: its accountant's record so far, and this turn's z."""
        self.sample_rate, self.sampling = turn.sample_rate, turn.sampling
        self.history = [tuple(h) for h in (state or {}).get("history", [])]
        self.exposure = dict((state or {}).get("exposure", {}))
        self._z = self.plan(turn)

    def state(self) -> dict:
        return {"history": [list(h) for h in self.history], "exposure": dict(self.exposure)}

    def gradient_fn(self, rng: torch.Generator):
        def step(model: nn.Module, graphs: Sequence[Data], loss: str = "cross_entropy") -> tuple[Update, float]:
            grads, losses = per_graph_gradients(model, graphs, loss)
            sq = sum((g.flatten(1).double() ** 2).sum(1) for g in grads.values())
            factors = (self.clip / (sq.sqrt() + 1e-12)).clamp(max=1.0).to(losses.dtype)
            out = {}
            for k, g in grads.items():
                total = (g * factors.view(-1, *[1] * (g.dim() - 1))).sum(0)
                noise = self._z * self.clip * torch.randn(total.shape, generator=rng, dtype=total.dtype)
                out[k] = (total + noise) / len(graphs)
            self._record_step(graphs)
            return out, float(losses.mean())
        return step

    def _record_step(self, graphs: Sequence[Data]) -> None:
        z, q = self._z, self.sample_rate
        if self.sampling != "random":
            uses = Counter(str(int(g.graph_id)) if "graph_id" in g else f"object-{id(g)}" for g in graphs)
            for key, copies in uses.items():  # no noise (z = 0): unbounded exposure
                added = (copies / z) ** 2 if z > 0 else math.inf
                self.exposure[key] = self.exposure.get(key, 0.0) + added
        elif self.history and self.history[-1][:2] == (z, q):
            self.history[-1] = (z, q, self.history[-1][2] + 1)
        else:
            self.history.append((z, q, 1))

    def epsilon(self) -> float:
        """Epsilon at ``delta`` so far (the most exposed graph's, for a shuffle's walk)."""
        worst = max(self.exposure.values(), default=0.0)
        if worst == math.inf:
            return math.inf
        walked = [(1.0 / math.sqrt(worst), 1.0, 1)] if worst > 0 else []
        return epsilon(self.history + walked, self.delta)

    def report(self) -> dict[str, float]:
        return {"epsilon": self.epsilon(), "delta": self.delta,
                "noise-multiplier": self._z}
