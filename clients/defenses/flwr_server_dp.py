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

Each row carries the client-level :math:`(\varepsilon, \delta)` of the global model released
after the row's round, by Flower's ``RdpAccountant`` and by Opacus' ``RDPAccountant``, as
``flwr_central_dp``'s (``clients/defenses/accounting.py``); the clipping's place changes nothing
in it.

Args:
    clipping_norm (float): :math:`C` (> 0).
    noise_multiplier (float): :math:`z` (>= 0).
    delta (float, optional): the :math:`\delta` the epsilons are read at, in (0, 1); keep it well
        below :math:`1 / N`. (default: 1e-5)
"""

from __future__ import annotations

from clients.defenses.flower_wrappers import SeededServerSideFixedClipping
from clients.defenses.flwr_central_dp import FlowerCentralDP
from fedgraph_sim import registry


@registry.defenses.register
class FlowerServerDP(FlowerCentralDP):
    """``flwr_central_dp`` with the clipping moved to the server: no client mod."""

    name = "flwr_server_dp"
    reply_mod = False
    weight_replies = True
    wrapper = SeededServerSideFixedClipping
    columns = "flwr-server-dp"

    def mod(self):
        return None
