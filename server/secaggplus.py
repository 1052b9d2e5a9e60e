"""The curious server behind Flower's SecAgg+: it observes what the protocol reveals and no more.

SecAgg+ (Bell, Bonawitz, Gascón, Lepoint, Raykova, "Secure Single-Server Aggregation with (Poly)
Logarithmic Overhead", ACM CCS 2020) lets the server learn the sum of the clients' updates and
nothing else about any one of them: each client masks its quantised update with pairwise masks
that cancel in the sum and a private mask whose seed it secret-shares among its neighbours, so a
client that drops out after sharing is unmasked from its neighbours' shares. Flower implements it
only in its workflow API: :class:`~flwr.server.workflow.SecAggPlusWorkflow` inside
:class:`~flwr.server.workflow.DefaultWorkflow`, over a ``LegacyContext`` and a strategy of
``flwr.server.strategy``, with ``flwr.client.mod.secaggplus_mod`` on every client
(:mod:`clients.secaggplus_mod`).

What the server receives, per round: in ``Strategy.aggregate_fit``, one ``FitRes`` per surviving
client, each holding the same parameters, the dequantised weighted mean

.. math::
    \\bar{p} = \\frac{\\sum_i w_i\\, Q^{-1}(Q(w_i p_i))}{\\sum_i w_i}, \\qquad
    w_i = \\frac{\\mathrm{round}(n_i / w_{\\max} \\cdot q)}{q},

where :math:`Q` clips to :math:`\\pm c` (``clipping_range``) and rounds stochastically onto
:math:`q` (``quantization_range``) levels, and :math:`n_i` is the client's example count; beside
it each client's plaintext count and metrics, which Flower does not mask. :class:`CuriousSecAggPlus`
turns that into one :class:`~fedgraph_sim.threat.ObservedUpdate` (``client_key`` ``AGGREGATE``,
its ``members`` the surviving partitions, ``metrics["dropped"]`` the sampled clients that did not
survive) and hands it to the curious strategy's observer, exactly as the simulated sum
(``threat.secure_aggregation: true``) does; every dropped client is a failed turn. A round the
protocol halts (too few clients left to reconstruct the masks) is a failed turn for each of its
sampled clients, and the global model stays as it was (:class:`SecAggPlusRounds`).
"""

from __future__ import annotations

import json
import logging
import re
from typing import Callable

import numpy as np
from flwr.app import Array, ArrayRecord, MetricRecord
from flwr.common import FitIns, FitRes, Parameters, ndarrays_to_parameters, parameters_to_ndarrays
from flwr.server.client_manager import ClientManager
from flwr.server.client_proxy import ClientProxy
from flwr.server.compat.legacy_context import LegacyContext
from flwr.server.strategy import Strategy
from flwr.server.workflow import SecAggPlusWorkflow
from flwr.server.workflow.constant import MAIN_CONFIGS_RECORD
from flwr.server.workflow.constant import Key as WorkflowKey

from fedgraph_sim.threat import AGGREGATE, ARRAY_KEYS, ClientFailure, ObservedUpdate
from server.strategy import Curious, last_line

log = logging.getLogger(__name__)

#: how a client's own failure reads in Flower's error reply (``clients.secaggplus_mod.TurnFailed``)
_FAILED_TURN = re.compile(r"partition (\d+) failed its turn: (.*?)'?>?$")


def dropped_reason(why: str) -> str:
    """A dropped client's failed turn: why, then what SecAgg+ did about it."""
    return f"{why}; it dropped out of SecAgg+ and its masks were removed with its neighbours' shares"


def revealed_mean_error_bound(num_examples: list[int], params, max_abs_value: float) -> float:
    """The largest error per entry of the revealed mean against the exact example-weighted mean
    of updates whose entries are at most ``max_abs_value`` and unclipped (``|w_i p_i| <= c``).

    Each client's stochastic rounding moves its weighted value by less than one level, ``2c/q``;
    the server divides the sum by :math:`\\sum_i w_i`. The weights themselves are rounded to
    multiples of ``1/q``, which moves the mean by at most ``max_abs_value`` times the total
    variation between the rounded and the exact weight shares (0 when every client has as many
    examples). ``params``: the ``SecAggPlusConfig``."""
    q, c = params.quantization_range, params.clipping_range
    rounded = [round(n / params.max_weight * q) / q for n in num_examples]
    levels = len(num_examples) * (2 * c / q) / sum(rounded)
    shares = sum(abs(r / sum(rounded) - n / sum(num_examples)) for r, n in zip(rounded, num_examples))
    return levels + max_abs_value * shares


class CuriousSecAggPlus(Strategy):
    """A legacy Flower strategy for ``SecAggPlusWorkflow`` whose eye is the curious strategy's.

    Args:
        curious: the curious strategy, for its bookkeeping and observer (sent weights, training
            settings, partitions, timings); its own Flower aggregation is not used.
        initial: the global model's initial arrays, by name.
        evaluate_fn: the session's centralised evaluation, ``(round, arrays) -> MetricRecord | None``.
        sampled_per_round: how many clients train in a round (``FederationConfig.sampled_per_round``).
        min_available: how many clients must be connected before a round starts.
    """

    def __init__(self, curious: Curious, initial: ArrayRecord,
                 evaluate_fn: Callable[[int, ArrayRecord], MetricRecord | None],
                 sampled_per_round: int, min_available: int) -> None:
        self.curious, self.evaluate_fn = curious, evaluate_fn
        self.keys = list(initial.keys())
        self.initial = [initial[k].numpy() for k in self.keys]
        self.sampled_per_round, self.min_available = sampled_per_round, min_available
        self._sampled: dict[int, list[int]] = {}  # round -> the Flower nodes sampled for it

    def initialize_parameters(self, client_manager: ClientManager) -> Parameters:
        return ndarrays_to_parameters(self.initial)

    def configure_fit(self, server_round: int, parameters: Parameters,
                      client_manager: ClientManager) -> list[tuple[ClientProxy, FitIns]]:
        sent = dict(zip(self.keys, parameters_to_ndarrays(parameters), strict=True))
        config = {"server-round": server_round, ARRAY_KEYS: json.dumps(self.keys),
                  **self.curious.round_config(server_round, sent)}
        clients = client_manager.sample(num_clients=self.sampled_per_round, min_num_clients=self.min_available)
        self._sampled[server_round] = [c.node_id for c in clients]
        return [(client, FitIns(parameters, dict(config))) for client in clients]

    def aggregate_fit(self, server_round: int, results: list[tuple[ClientProxy, FitRes]],
                      failures: list) -> tuple[Parameters | None, dict]:
        """``results``: the survivors' ``FitRes``, each holding the revealed mean."""
        sampled = self._sampled.pop(server_round, [])
        survivors = {proxy.node_id: int(res.metrics["partition-id"]) for proxy, res in results}
        for node, partition in survivors.items():
            self.curious.note_partition(node, partition)
        dropped = [self._failure(server_round, node, failures) for node in sampled if node not in survivors]
        if not results:
            self.curious.witness_observed(0.0, [], dropped)
            self.curious.forget(server_round)
            return None, {}
        sent = self.curious.sent(server_round)
        first = results[0][1]
        keys = json.loads(str(first.metrics[ARRAY_KEYS]))
        mean = dict(zip(keys, parameters_to_ndarrays(first.parameters), strict=True))  # float64, as revealed
        curious = self.curious
        update = ObservedUpdate(
            round=server_round, client_key=AGGREGATE, global_weights=sent, returned=mean,
            kind="gradient" if curious.local_steps == 1 else "weights",
            num_examples=sum(res.num_examples for _, res in results),
            metrics={"clients": len(results), "dropped": len(dropped), "secaggplus": 1,
                     **_worst_defense_metrics([res.metrics for _, res in results])},
            lr=curious.lr, local_steps=curious.local_steps, batch_size=curious.batch_size * len(results),
            same_batch=curious.same_batch, members=tuple(sorted(survivors.values())))
        compute = max(float(res.metrics.get("train-seconds", 0.0)) for _, res in results)
        curious.witness_observed(compute, [update], dropped)
        new = mean if curious.local_steps > 1 else {k: sent[k] - curious.lr * mean[k] for k in mean}
        curious.forget(server_round)
        return ndarrays_to_parameters([np.asarray(new[k], dtype=sent[k].dtype) for k in self.keys]), {}

    def halted(self, server_round: int, stage: str) -> None:
        """The protocol stopped the round in ``stage``: a failed turn for every sampled client."""
        failures = [ClientFailure(server_round, self.curious.partition_of(node),
                                  f"SecAgg+ halted the round in its {stage} stage: too few clients left to "
                                  "reconstruct the masks; the global model is unchanged")
                    for node in self._sampled.pop(server_round, [])]
        self.curious.witness_observed(0.0, [], failures)
        self.curious.forget(server_round)

    def _failure(self, server_round: int, node: int, failures: list) -> ClientFailure:
        partition = self.curious.partition_of(node)
        for failure in failures:  # a client's own failure names its partition in Flower's error reply
            error = failure.args[0] if isinstance(failure, Exception) and failure.args else failure
            match = _FAILED_TURN.search(last_line(getattr(error, "reason", "")))
            if match and int(match.group(1)) == partition:
                return ClientFailure(server_round, partition, dropped_reason(match.group(2)))
        return ClientFailure(server_round, partition, dropped_reason("no reply"))

    def configure_evaluate(self, server_round, parameters, client_manager):
        return []  # the global model is evaluated centrally (evaluate)

    def aggregate_evaluate(self, server_round, results, failures):
        return None, {}

    def evaluate(self, server_round: int, parameters: Parameters):
        arrays = ArrayRecord({k: Array(v) for k, v in zip(self.keys, parameters_to_ndarrays(parameters), strict=True)})
        metrics = self.evaluate_fn(server_round, arrays)
        return None if metrics is None else (float(metrics.get("loss", float("nan"))), dict(metrics))


def _worst_defense_metrics(metrics: list[dict]) -> dict:
    """Each defense report over the survivors, as the simulated sum reports it: the worst client's."""
    keys = {k for m in metrics for k in m if k.startswith("defense-")}
    return {k: max(float(m[k]) for m in metrics if k in m) for k in keys}


class SecAggPlusRounds(SecAggPlusWorkflow):
    """Flower's SecAgg+ fit round, telling the strategy when the protocol halts a round (Flower's
    only logs it), so that the round's sampled clients become failed turns, not silence."""

    def __call__(self, grid, context: LegacyContext) -> None:
        from flwr.server.workflow.secure_aggregation.secaggplus_workflow import WorkflowState

        state = WorkflowState()
        steps = {"setup": self.setup_stage, "share keys": self.share_keys_stage,
                 "collect masked vectors": self.collect_masked_vectors_stage, "unmask": self.unmask_stage}
        for stage, step in steps.items():
            if not step(grid, context, state):
                server_round = int(context.state.config_records[MAIN_CONFIGS_RECORD][WorkflowKey.CURRENT_ROUND])
                context.strategy.halted(server_round, stage)
                return
