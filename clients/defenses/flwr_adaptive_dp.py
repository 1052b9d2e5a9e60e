r"""Flower's central differential privacy with client-side adaptive clipping: the client mod
``flwr.clientapp.mod.adaptiveclipping_mod`` and the server's strategy wrapper
``flwr.serverapp.strategy.DifferentialPrivacyClientSideAdaptiveClipping``, Flower's own code, as
one defense.

After Andrew et al., "Differentially Private Learning with Adaptive Clipping" (NeurIPS 2021):
each client clips its FedAvg update to the round's norm :math:`C_t` and reports one bit
:math:`b_k`; the server averages the clipped updates, adds :math:`\mathcal{N}(0, (z C_t / n)^2 I)`
to the aggregate, and updates the norm geometrically,

.. math::
    C_{t+1} = C_t \exp\left(-\eta_C (\tilde{b}_t - \gamma)\right), \qquad
    \tilde{b}_t = \frac{1}{m}\left(\sum_{k=1}^{m} b_k + \mathcal{N}(0, \sigma_b^2)\right),

over the :math:`m` replies of turns that trained, with Flower splitting the noise multiplier
:math:`z` between the update and the count (``compute_adaptive_noise_params``).

A difference from the paper, in Flower 1.41's code, kept as it is (the bench measures what a
Flower deployment gets): the paper's bit is 1 when the update was *within* the norm, so that the
update steers :math:`C` to the :math:`\gamma`-quantile of the update norms; Flower's bit
(``adaptive_clip_inputs_inplace``) is 1 when the update was *clipped*, in the same formula, so a
round where more than :math:`\gamma` of the updates were clipped shrinks the norm further.

As with ``flwr_central_dp``, the noise is the server's act, after it has received every reply: a
curious server sees each client's clipped, noise-free update (and its bit). The wrapper's noise is
seeded per round, and Flower's wrapper gets the replies of the turns that trained
(``clients/defenses/flower_wrappers.py``). It needs FedAvg replies and comes after the project's
own defenses.

Each row carries the client-level :math:`(\varepsilon, \delta)` of the global model released
after the row's round, by Flower's ``RdpAccountant`` and by Opacus' ``RDPAccountant``, at
:math:`z`: Flower's split of :math:`z` is Andrew et al.'s (their Theorem 1), under which the noised
update and the noised count are together one Gaussian mechanism at :math:`z`, whatever the norm
does (``clients/defenses/accounting.py``).

Args:
    noise_multiplier (float): :math:`z` (>= 0).
    initial_clipping_norm (float, optional): :math:`C_1` (> 0). (default: 0.1, Andrew et al.'s)
    target_clipped_quantile (float, optional): :math:`\gamma`, in [0, 1]. (default: 0.5)
    clip_norm_lr (float, optional): :math:`\eta_C` (> 0). (default: 0.2, Andrew et al.'s)
    clipped_count_stddev (float, optional): :math:`\sigma_b` (>= 0); None: Flower's default,
        the sampled clients over 20. (default: None)
    delta (float, optional): the :math:`\delta` the epsilons are read at, in (0, 1); keep it well
        below :math:`1 / N`. (default: 1e-5)
"""

from __future__ import annotations

from clients.defenses.accounting import released_model_report
from clients.defenses.base import ClientTurn, Defense, check_number
from clients.defenses.flower_wrappers import SeededAdaptiveClipping, seeded, guard_zero_norm_clipping
from fedgraph_sim import registry
from fedgraph_sim.errors import require


@registry.defenses.register
class FlowerAdaptiveDP(Defense):
    name = "flwr_adaptive_dp"
    contract_params = {"noise_multiplier": 0.1}
    reply_mod = True

    def __init__(self, noise_multiplier: float, initial_clipping_norm: float = 0.1,
                 target_clipped_quantile: float = 0.5, clip_norm_lr: float = 0.2,
                 clipped_count_stddev: float | None = None, delta: float = 1e-5) -> None:
        self.noise_multiplier = check_number(noise_multiplier, "noise_multiplier")
        self.initial_clipping_norm = check_number(initial_clipping_norm, "initial_clipping_norm", strict=True)
        self.target_clipped_quantile = check_number(target_clipped_quantile, "target_clipped_quantile")
        require(self.target_clipped_quantile <= 1, "target_clipped_quantile",
                f"must be in [0, 1] (got {target_clipped_quantile!r})")
        self.clip_norm_lr = check_number(clip_norm_lr, "clip_norm_lr", strict=True)
        self.clipped_count_stddev = (None if clipped_count_stddev is None
                                     else check_number(clipped_count_stddev, "clipped_count_stddev"))
        self.delta = check_number(delta, "delta", strict=True, high=1.0)
        self.turn: ClientTurn | None = None

    def begin(self, turn: ClientTurn, state) -> None:
        self.turn = turn  # the round, and how many clients of how many the server samples

    def mod(self):
        from flwr.clientapp.mod import adaptiveclipping_mod

        guard_zero_norm_clipping()  # in the client's process, where the mod clips
        return adaptiveclipping_mod

    def wrap_strategy(self, strategy, num_sampled_clients: int, seed: int):
        return seeded(SeededAdaptiveClipping(
            strategy, self.noise_multiplier, num_sampled_clients, initial_clipping_norm=self.initial_clipping_norm,
            target_clipped_quantile=self.target_clipped_quantile, clip_norm_lr=self.clip_norm_lr,
            clipped_count_stddev=self.clipped_count_stddev), seed)

    def report(self) -> dict[str, float]:
        return {"flwr-adaptive-dp-noise-multiplier": self.noise_multiplier,
                "flwr-adaptive-dp-initial-clipping-norm": self.initial_clipping_norm,
                **released_model_report("flwr-adaptive-dp", self.noise_multiplier, self.turn, self.delta)}
