"""DP-Hybrid: DP-Gradients and DP-Activations together, each with parameter ``sigma / 2``
(GraphDLG, Wei et al. 2026, Appendix A.7, Table 9). Under ``laplace_param: variance`` the halved
parameter is the variance, as the paper words it; under ``scale`` (default) it is the scale.
"""

from __future__ import annotations

import torch

from clients.defenses.base import Defense, Update, check_sigma
from clients.defenses.dp_activations import DPActivations
from clients.defenses.dp_gradients import DPGradients
from fedgraph_sim import registry


@registry.defenses.register
class DPHybrid(Defense):
    name = "dp_hybrid"
    contract_params = {"sigma": 0.01}
    hooks_forward = True  # noise on the layer outputs, added by forward hooks

    def __init__(self, sigma: float, noise: str = "laplace", laplace_param: str = "scale") -> None:
        half = check_sigma(sigma) / 2
        self.activations = DPActivations(half, noise, laplace_param)
        self.gradients = DPGradients(half, noise, laplace_param)

    def training(self, model: torch.nn.Module, rng: torch.Generator):
        return self.activations.training(model, rng)

    def apply(self, update: Update, rng: torch.Generator) -> Update:
        return self.gradients.apply(update, rng)

    def report(self) -> dict[str, float]:
        return {**self.activations.report(), **self.gradients.report()}
