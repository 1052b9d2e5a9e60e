r"""Flower's local differential privacy: ``flwr.clientapp.mod.LocalDpMod``, Flower's own code, as a
defense.

The mod wraps the client's turn and rewrites its reply: it clips the model update (the replied
weights minus the sent ones) to L2 norm :math:`C` and adds Gaussian noise to every replied weight,

.. math::
    \tilde{w} = w_{\text{sent}} + \Delta \cdot \min\left(1, \frac{C}{\lVert \Delta \rVert_2}\right)
    + \mathcal{N}(0, \sigma^2 I), \qquad \Delta = w - w_{\text{sent}}, \qquad
    \sigma = \frac{s \sqrt{2 \ln(1.25 / \delta)}}{\varepsilon},

the Gaussian mechanism of Dwork and Roth, "The Algorithmic Foundations of Differential Privacy"
(Foundations and Trends in Theoretical Computer Science, 2014, Theorem A.1; valid for
:math:`\varepsilon < 1`), with the sensitivity :math:`s` as given (Flower does not derive it from
:math:`C`: ``sensitivity: <clipping_norm>`` is the bound that clipping guarantees). Each round's
reply is one release; Flower keeps no accountant across rounds.

Beside the project's ``dp_gradients`` with ``noise: gaussian`` and ``clip``: the same clip and
noise on the FedAvg weight delta, but there the noise is given as its standard deviation, here as
:math:`(\varepsilon, \delta, s)`. The mod rewrites weights, so it needs FedAvg replies
(``train.local_steps`` > 1: a FedSGD reply is a gradient, which it would clip against the sent
weights). It acts after the turn, so it comes after the project's own defenses in the stack.

Args:
    clipping_norm (float): :math:`C`, the update's L2 bound (> 0).
    sensitivity (float): :math:`s` (>= 0).
    epsilon (float): :math:`\varepsilon` (> 0).
    delta (float): :math:`\delta`, in (0, 1).
"""

from __future__ import annotations

import math

from clients.defenses.base import Defense, check_number
from clients.defenses.flower_wrappers import guard_zero_norm_clipping
from fedgraph_sim import registry


@registry.defenses.register
class FlowerLocalDP(Defense):
    name = "flwr_local_dp"
    contract_params = {"clipping_norm": 1.0, "sensitivity": 1.0, "epsilon": 1.0, "delta": 1e-5}
    reply_mod = True

    def __init__(self, clipping_norm: float, sensitivity: float, epsilon: float, delta: float) -> None:
        self.clipping_norm = check_number(clipping_norm, "clipping_norm", strict=True)
        self.sensitivity = check_number(sensitivity, "sensitivity")
        self.epsilon = check_number(epsilon, "epsilon", strict=True)
        self.delta = check_number(delta, "delta", low=0.0, strict=True, high=1.0)

    @property
    def noise_std(self) -> float:
        """The standard deviation LocalDpMod draws its noise with."""
        return self.sensitivity * math.sqrt(2 * math.log(1.25 / self.delta)) / self.epsilon

    def mod(self):
        from flwr.clientapp.mod import LocalDpMod

        guard_zero_norm_clipping()  # in the client's process, where the mod clips
        return LocalDpMod(self.clipping_norm, self.sensitivity, self.epsilon, self.delta)

    def report(self) -> dict[str, float]:
        return {"flwr-local-dp-noise-std": self.noise_std, "flwr-local-dp-epsilon": self.epsilon,
                "flwr-local-dp-delta": self.delta}
