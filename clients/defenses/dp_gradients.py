"""DP-Gradients: noise on the shared update (GraphDLG, Wei et al. 2026, Appendix A.7, Table 9).

``g~ = clip_C(g) + noise`` with i.i.d. Laplace(0, b) per entry (default; ``b = sigma`` under
``laplace_param: scale``, ``b = sqrt(sigma / 2)`` under ``variance``) or N(0, sigma^2)
(``noise: gaussian``). Clipping of the update's global L2 norm to ``clip`` is optional and off
by default, as in the paper; without it the noise gives no (epsilon, delta) guarantee, so this is
heuristic noise (use ``dp_sgd`` for accounted privacy). The effective variance is logged and
reported in every row.
"""

from __future__ import annotations

import logging

import torch

from clients.defenses.base import Defense, Noise, Update, check_number, clip_to
from fedgraph_sim import registry

log = logging.getLogger(__name__)


@registry.defenses.register
class DPGradients(Defense):
    name = "dp_gradients"

    def __init__(self, sigma: float, noise: str = "laplace", laplace_param: str = "scale",
                 clip: float | None = None) -> None:
        self.noise = Noise(sigma, noise, laplace_param)
        self.clip = None if clip is None else check_number(clip, "clip", strict=True)
        log.info("dp_gradients: %s per update entry", self.noise.describe())

    def apply(self, update: Update, rng: torch.Generator) -> Update:
        if self.clip is not None:
            update = clip_to(update, self.clip)
        return {k: v + self.noise.sample(v, rng) for k, v in update.items()}

    def report(self) -> dict[str, float]:
        return {"gradient-noise-variance": self.noise.variance}
