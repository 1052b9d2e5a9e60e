r"""Flower's central differential privacy with server-side fixed clipping: the strategy wrapper
``flwr.serverapp.strategy.DifferentialPrivacyServerSideFixedClipping``, Flower's own code, as a
defense with a server half only.

The server clips each client's FedAvg update to L2 norm :math:`C`, averages the clipped updates
and adds Gaussian noise to the aggregate,

.. math::
    \tilde{w} = \frac{1}{n} \sum_{k=1}^{n} \left(w_{\text{sent}} + \mathrm{clip}_C(w_k - w_{\text{sent}})\right)
    + \mathcal{N}\left(0, \left(\frac{z C}{n}\right)^2 I\right),

DP-FedAvg (McMahan et al., "Learning Differentially Private Recurrent Language Models", ICLR 2018),
with :math:`n` the clients sampled per round and :math:`z` the noise multiplier.

The threat model is the point: the clipping and the noise are both the *server's* acts, after it
has received every client's reply. A curious server sees each client's update as the client sent
it, unclipped and noise-free, so against it this defense protects nothing; it protects the
released model from everyone else. The attacks receive what the server receives, so their rows
equal the undefended ones. Flower offers it beside client-side clipping (``flwr_central_dp``),
which at least clips before the server sees the update; the bench has both so that the
difference can be measured.

As with the other wrappers (``clients/defenses/flower_wrappers.py``), its noise is seeded per round
from the run's seed, and the curious strategy witnesses every reply before Flower's wrapper clips
it. It needs FedAvg replies (``train.local_steps`` > 1): Flower clips the reply against the weights
it sent, and a FedSGD reply is a gradient.

Args:
    clipping_norm (float): :math:`C` (> 0).
    noise_multiplier (float): :math:`z` (>= 0).
"""

from __future__ import annotations

from clients.defenses.base import Defense, check_number
from clients.defenses.flower_wrappers import SeededServerSideFixedClipping, seeded
from fedgraph_sim import registry


@registry.defenses.register
class FlowerServerDP(Defense):
    name = "flwr_server_dp"
    weight_replies = True

    def __init__(self, clipping_norm: float, noise_multiplier: float) -> None:
        self.clipping_norm = check_number(clipping_norm, "clipping_norm", strict=True)
        self.noise_multiplier = check_number(noise_multiplier, "noise_multiplier")

    def wrap_strategy(self, strategy, num_sampled_clients: int, seed: int):
        return seeded(SeededServerSideFixedClipping(strategy, self.noise_multiplier, self.clipping_norm,
                                                    num_sampled_clients), seed)

    def report(self) -> dict[str, float]:
        return {"flwr-server-dp-clipping-norm": self.clipping_norm,
                "flwr-server-dp-noise-multiplier": self.noise_multiplier}
