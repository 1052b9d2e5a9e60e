r"""Flower's central differential privacy with client-side fixed clipping: the client mod
``flwr.clientapp.mod.fixedclipping_mod`` and the server's strategy wrapper
``flwr.serverapp.strategy.DifferentialPrivacyClientSideFixedClipping``, Flower's own code, as one
defense.

Each client clips its FedAvg update to L2 norm :math:`C` (the norm comes in the train config, put
there by the server's wrapper); the server averages the clipped updates and adds Gaussian noise
to the aggregate,

.. math::
    \tilde{w} = \frac{1}{n} \sum_{k=1}^{n} \left(w_{\text{sent}} + \mathrm{clip}_C(w_k - w_{\text{sent}})\right)
    + \mathcal{N}\left(0, \left(\frac{z C}{n}\right)^2 I\right),

DP-FedAvg with fixed clipping (McMahan et al., "Learning Differentially Private Recurrent Language
Models", ICLR 2018; Andrew et al., "Differentially Private Learning with Adaptive Clipping",
NeurIPS 2021), with :math:`n` the clients sampled per round and :math:`z` the noise multiplier.

The threat model is the point: the noise is the *server's* act, after it has received every
client's reply. A curious server sees each client's clipped, noise-free update, so against it this
defense is the clipping alone; the noise protects the released model from everyone else. The
attacks receive what the server receives, so their rows show exactly that.

Beside Flower's wrapper, two things of ours (``clients/defenses/flower_wrappers.py``): its noise
is seeded per round from the run's seed, and a round Flower refuses to aggregate (an error reply)
is still witnessed by the curious server, whose rows record it. Like ``flwr_local_dp`` it needs
FedAvg replies (``train.local_steps`` > 1) and comes after the project's own defenses.

Each row carries the client-level :math:`(\varepsilon, \delta)` of the global model released
after the row's round, :math:`t` rounds of :math:`n` of the :math:`N` clients at :math:`z`, by
Flower's ``RdpAccountant`` and by Opacus' ``RDPAccountant`` (``clients/defenses/accounting.py``:
the math, and why both use Poisson sampling at :math:`q = n / N` where Flower samples exactly
:math:`n`). It is the released model's guarantee against everyone but the server.

Args:
    clipping_norm (float): :math:`C` (> 0).
    noise_multiplier (float): :math:`z` (>= 0).
    delta (float, optional): the :math:`\delta` the epsilons are read at, in (0, 1); keep it well
        below :math:`1 / N`. (default: 1e-5)
"""

from __future__ import annotations

from clients.defenses.accounting import released_model_report
from clients.defenses.base import ClientTurn, Defense, check_number
from clients.defenses.flower_wrappers import SeededFixedClipping, guard_zero_norm_clipping, seeded
from fedgraph_sim import registry


@registry.defenses.register
class FlowerCentralDP(Defense):
    name = "flwr_central_dp"
    contract_params = {"clipping_norm": 1.0, "noise_multiplier": 0.1}
    reply_mod = True
    #: The server's half: Flower's strategy wrapper with fixed clipping, its noise seeded per round.
    wrapper = SeededFixedClipping
    #: The prefix of the row columns it reports.
    columns = "flwr-central-dp"

    def __init__(self, clipping_norm: float, noise_multiplier: float, delta: float = 1e-5) -> None:
        self.clipping_norm = check_number(clipping_norm, "clipping_norm", strict=True)
        self.noise_multiplier = check_number(noise_multiplier, "noise_multiplier")
        self.delta = check_number(delta, "delta", strict=True, high=1.0)
        self.turn: ClientTurn | None = None

    def begin(self, turn: ClientTurn, state) -> None:
        self.turn = turn  # the round, and how many clients of how many the server samples

    def mod(self):
        from flwr.clientapp.mod import fixedclipping_mod

        guard_zero_norm_clipping()  # in the client's process, where the mod clips
        return fixedclipping_mod

    def wrap_strategy(self, strategy, num_sampled_clients: int, seed: int):
        return seeded(self.wrapper(strategy, self.noise_multiplier, self.clipping_norm, num_sampled_clients), seed)

    def report(self) -> dict[str, float]:
        return {f"{self.columns}-clipping-norm": self.clipping_norm,
                f"{self.columns}-noise-multiplier": self.noise_multiplier,
                **released_model_report(self.columns, self.noise_multiplier, self.turn, self.delta)}
