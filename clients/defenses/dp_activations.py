"""DP-Activations: noise on every GNN layer output during the client's own training forward pass
(GraphDLG, Wei et al. 2026, Appendix A.7, Table 9).

Forward hooks on the model's per-layer ReLU modules (``GraphClassifier.acts``, so after the ReLU,
including the last layer that feeds pooling; on a user's model, whose activations may be function
calls, its message-passing layers' outputs) add i.i.d. noise with parameter ``sigma`` (Laplace by
default, read as in ``dp_gradients``). The backward pass goes through the noisy forward, so the
shared gradient changes; the hooks fire only in training mode and are removed afterwards, so
evaluation and the attacker's copy of the model are untouched.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager

import torch
from torch_geometric.nn import MessagePassing

from clients.defenses.base import Defense, Noise
from fedgraph_sim import registry

log = logging.getLogger(__name__)


@registry.defenses.register
class DPActivations(Defense):
    name = "dp_activations"
    contract_params = {"sigma": 0.01}
    hooks_forward = True  # noise on the layer outputs, added by forward hooks

    def __init__(self, sigma: float, noise: str = "laplace", laplace_param: str = "scale") -> None:
        self.noise = Noise(sigma, noise, laplace_param)
        log.info("dp_activations: %s per layer-output entry", self.noise.describe())

    @contextmanager
    def training(self, model: torch.nn.Module, rng: torch.Generator):
        def add_noise(module, inputs, output):
            return output + self.noise.sample(output, rng) if module.training else output

        layers = model.acts if hasattr(model, "acts") else [m for m in model.modules() if isinstance(m, MessagePassing)]
        handles = [layer.register_forward_hook(add_noise) for layer in layers]
        try:
            yield
        finally:
            for handle in handles:
                handle.remove()

    def report(self) -> dict[str, float]:
        return {"activation-noise-variance": self.noise.variance}
