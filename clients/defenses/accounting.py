r"""Rényi-DP accounting of sampled Gaussian mechanisms, by Opacus' accountant and by Flower's.

:func:`epsilon` is Opacus' ``RDPAccountant`` over a history of ``(z, q, steps)``: ``dp_sgd``
accounts its per-graph steps with it. :func:`client_level_epsilons` accounts the global model that
Flower's central-DP wrappers release (``flwr_central_dp``, ``flwr_server_dp``, ``flwr_adaptive_dp``),
DP-FedAvg (McMahan et al., "Learning Differentially Private Recurrent Language Models", ICLR 2018):
in round :math:`t` the server averages the clipped updates of the :math:`n` clients it sampled
from the :math:`N` of the federation and adds Gaussian noise,

.. math::
    \tilde{w}_t = \frac{1}{n}\Big(\sum_{k \in S_t} \mathrm{clip}_C(\Delta_k)
    + \mathcal{N}(0, z^2 C^2 I)\Big).

Adding or removing one client changes the sum by at most :math:`C`, so with :math:`n` public
(the configured sample size, as Flower's wrapper divides by it) a round is the Gaussian mechanism
with noise multiplier :math:`z`, of Rényi DP :math:`\varepsilon(\alpha) = \alpha / (2 z^2)` at
every order :math:`\alpha > 1` (Mironov, "Rényi Differential Privacy", CSF 2017). A client taking
part with probability :math:`q = n / N` (Poisson sampling) makes it the sampled Gaussian
mechanism, whose RDP at an integer order is (Mironov, Talwar, Zhang, "Rényi Differential Privacy
of the Sampled Gaussian Mechanism", arXiv 1908.10530)

.. math::
    \varepsilon_q(\alpha) = \frac{1}{\alpha - 1} \log \sum_{k=0}^{\alpha} \binom{\alpha}{k}
    (1 - q)^{\alpha - k} q^k \exp\left(\frac{k^2 - k}{2 z^2}\right),

and :math:`T` rounds compose to :math:`T \varepsilon_q(\alpha)` (Mironov 2017), read at
:math:`\delta` as

.. math::
    \varepsilon = \min_\alpha \; T \varepsilon_q(\alpha) + \log\frac{\alpha - 1}{\alpha}
    - \frac{\log \delta + \log \alpha}{\alpha - 1}

(Balle et al., "Hypothesis Testing Interpretations and Rényi Differential Privacy", AISTATS
2020), over each library's grid of orders. With every client in every round (:math:`q = 1`) there
is no amplification: :math:`\varepsilon_1(\alpha) = \alpha / (2 z^2)`.

Sampling. Flower's strategy draws exactly :math:`n` of the connected clients per round, without
replacement. Flower's accountant has that model (``SamplingMethod.WITHOUT_REPLACEMENT``) only
under ``NeighboringRelation.REPLACE_ONE`` (one client's data swapped for another's), where the sum
moves by up to :math:`2C` and its RDP backend (dp-accounting) reads the event's noise multiplier
against that, so the event carries :math:`z / 2`: another relation, its epsilon not comparable
(``sampling="without_replacement"`` computes it). Opacus has only Poisson sampling. Both reported
numbers therefore use Poisson sampling at :math:`q = n / N` under add-or-remove-one, the relation
of McMahan et al. and of Flower's own accounted mode (the wrappers' ``accountant`` argument, which
Flower 1.41 takes with ``NO_AMPLIFICATION`` only; ours too when :math:`n = N`): the usual
approximation of fixed-size sampling (``dp_sgd`` makes it for its batches), not a bound for it.
They differ by the libraries' numerics alone (their series at fractional orders; dp-accounting
leaves out an order whose series does not converge, and its warning is silenced here): under 0.5%
at an epsilon below 10, 3% at 70 (:math:`q = 0.75`, Flower's the larger); equal at :math:`q = 1`.

The accounting takes the aggregate to be the plain mean (FedAvg's example weights equal, every
reply counting ``train.batch_size`` examples, as Flower's accounted mode checks) and counts a
release in every round, also one that Flower refused to aggregate (an upper bound then). Adaptive
clipping is accounted at its :math:`z` too: Flower splits it as Andrew et al. ("Differentially
Private Learning with Adaptive Clipping", NeurIPS 2021, Theorem 1) do, update noise
:math:`z_\Delta = (z^{-2} - (2\sigma_b)^{-2})^{-1/2}` beside count noise :math:`\sigma_b`, which
together are one Gaussian at :math:`z` (Flower's 0/1 count differs from the paper's centred one
by :math:`n / 2`, public).
"""

from __future__ import annotations

import logging
import math
from contextlib import contextmanager
from functools import lru_cache
from typing import Sequence

from clients.defenses.base import ClientTurn
from fedgraph_sim.errors import require

SAMPLINGS = ("poisson", "without_replacement")


def epsilon(history: Sequence[tuple[float, float, int]], delta: float) -> float:
    """Epsilon at ``delta`` after ``history`` of ``(noise_multiplier, sample_rate, steps)``, by
    Opacus' ``RDPAccountant`` (Poisson sampling)."""
    # Opacus is imported where it is used: its package imports the whole privacy engine (about
    # 1.2 s per process), which every server, client actor and attack worker would otherwise pay.
    from opacus.accountants import RDPAccountant

    accountant = RDPAccountant()
    accountant.history = [tuple(h) for h in history]
    return float(accountant.get_epsilon(delta=delta)) if history else 0.0


@contextmanager
def _quiet(name: str = "absl"):
    """dp-accounting warns on every order it leaves out; the epsilon is the same without it."""
    logger = logging.getLogger(name)
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def flower_epsilon(noise_multiplier: float, sampled: int, population: int, rounds: int, delta: float,
                   sampling: str = "poisson") -> float:
    """Epsilon at ``delta`` after ``rounds`` releases of the Gaussian at ``noise_multiplier`` over
    ``sampled`` of ``population`` clients, by Flower's ``RdpAccountant``: Poisson sampling (no
    amplification when all take part) under add-or-remove-one, or ``without_replacement`` under
    replace-one (the event at ``noise_multiplier / 2``)."""
    require(sampling in SAMPLINGS, "sampling", f"unknown value {sampling!r}; valid: {', '.join(SAMPLINGS)}")
    if rounds == 0:
        return 0.0
    if noise_multiplier == 0:
        return math.inf
    from flwr.supercore.privacy_accounting import (GaussianPrivacyEvent, NeighboringRelation, PrivacyConfig,
                                                   SamplingMethod)
    from flwr.supercore.privacy_accounting.rdp_accountant import RdpAccountant

    if sampling == "without_replacement":
        method, relation, z = SamplingMethod.WITHOUT_REPLACEMENT, NeighboringRelation.REPLACE_ONE, noise_multiplier / 2
    else:
        method = SamplingMethod.NO_AMPLIFICATION if sampled == population else SamplingMethod.POISSON
        relation, z = NeighboringRelation.ADD_OR_REMOVE_ONE, noise_multiplier
    accountant = RdpAccountant(PrivacyConfig(delta, population, relation, method))
    with _quiet():
        accountant.compose(GaussianPrivacyEvent(z, sampled, population), rounds)
        return accountant.get_epsilon(delta)


@lru_cache(maxsize=64)
def client_level_epsilons(noise_multiplier: float, sampled: int, population: int, rounds: int,
                          delta: float) -> tuple[float, float]:
    """``(Flower's, Opacus')`` epsilon at ``delta`` of the global model after ``rounds`` DP-FedAvg
    rounds at noise multiplier z, ``sampled`` of ``population`` clients a round (the module's
    docstring); infinite at z = 0, 0 before any round."""
    require(1 <= sampled <= population, "federation",
            f"{sampled} clients sampled per round out of {population}: need 1 <= sampled <= clients")
    if rounds == 0:
        return 0.0, 0.0
    if noise_multiplier == 0:
        return math.inf, math.inf
    return (flower_epsilon(noise_multiplier, sampled, population, rounds, delta),
            epsilon([(noise_multiplier, sampled / population, rounds)], delta))


def released_model_report(prefix: str, noise_multiplier: float, turn: ClientTurn | None,
                          delta: float) -> dict[str, float]:
    """The central-DP defenses' epsilon columns after the turn's round (the release this reply
    goes into included): ``<prefix>-epsilon-flower``, ``<prefix>-epsilon-opacus`` and
    ``<prefix>-delta``; none before a turn has begun."""
    if turn is None or turn.round < 1:
        return {}
    flower, opacus = client_level_epsilons(noise_multiplier, turn.sampled_clients, turn.num_clients,
                                           turn.round, delta)
    return {f"{prefix}-epsilon-flower": flower, f"{prefix}-epsilon-opacus": opacus, f"{prefix}-delta": delta}
