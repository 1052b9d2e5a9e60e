r"""DP-Gradients: noise on the shared update (GraphDLG, Wei et al. 2026, Appendix A.7, Table 9).

``g~ = clip_C(g) + noise`` with i.i.d. Laplace(0, b) per entry (default; ``b = sigma`` under
``laplace_param: scale``, ``b = sqrt(sigma / 2)`` under ``variance``) or N(0, sigma^2)
(``noise: gaussian``). Clipping of the update's global L2 norm to ``clip`` is optional and off
by default, as in the paper; without it the noise gives no (epsilon, delta) guarantee, so this is
heuristic noise (use ``dp_sgd`` for accounted privacy). The effective variance is logged and
reported in every row.

With ``clip`` and ``noise: gaussian`` it is the Gaussian mechanism on the update, and each row also
carries its epsilon at ``delta``: a graph added, removed or changed moves the clipped update by at
most :math:`2C`, so each round is one Gaussian step at noise multiplier :math:`\sigma / (2C)`,
composed (Opacus' RDP accountant, no sampling) over the rounds so far. Laplace noise under an L2
clip has no such claim (its L1 sensitivity is unbounded).
"""

from __future__ import annotations

import logging

import torch

from clients.defenses.accounting import epsilon
from clients.defenses.base import ClientTurn, Defense, Noise, Update, check_number, clip_to
from fedgraph_sim import registry

log = logging.getLogger(__name__)


@registry.defenses.register
class DPGradients(Defense):
    name = "dp_gradients"
    contract_params = {"sigma": 0.01}

    def __init__(self, sigma: float, noise: str = "laplace", laplace_param: str = "scale",
                 clip: float | None = None, delta: float = 1e-5) -> None:
        self.noise = Noise(sigma, noise, laplace_param)
        self.clip = None if clip is None else check_number(clip, "clip", strict=True)
        self.delta = check_number(delta, "delta", strict=True, high=1.0)
        self.round = 0
        log.info("dp_gradients: %s per update entry", self.noise.describe())

    def apply(self, update: Update, rng: torch.Generator) -> Update:
        if self.clip is not None:
            update = clip_to(update, self.clip)
        return {k: v + self.noise.sample(v, rng) for k, v in update.items()}

    def begin(self, turn: ClientTurn, state) -> None:
        self.round = turn.round  # a client's rounds so far, each one Gaussian step (if it took part)

    def report(self) -> dict[str, float]:
        out = {"gradient-noise-variance": self.noise.variance}
        if self.clip is not None and self.noise.kind == "gaussian" and self.round >= 1:
            z = self.noise.sigma / (2 * self.clip)
            spent = epsilon([(z, 1.0, self.round)], self.delta) if z > 0 else float("inf")
            out.update({"epsilon": spent, "delta": self.delta})
        return out
