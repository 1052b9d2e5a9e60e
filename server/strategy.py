"""The curious strategy: one of Flower's strategies, plus an eye on every reply.

:class:`Curious` is a mixin over a Flower strategy (``aggregation.strategy``: FedAvg, FedAvgM,
FedAdam, FedYogi, FedAdagrad). It remembers the global arrays it sends (``configure_train``),
turns each reply into an :class:`~fedgraph_sim.threat.ObservedUpdate` and hands it to an observer
(the attack runner) in ``aggregate_train``, then lets the Flower strategy aggregate, unchanged. A
reply that carries no update (Flower's error reply, or a client reporting its own failure) becomes
a :class:`~fedgraph_sim.threat.ClientFailure` for the observer and is left out of the aggregate;
so is a reply holding a NaN or an infinity (:func:`non_finite`), which averaged in would silently
make the global model NaN: its failure row says so, and ``--strict`` counts it.

In FedSGD mode (one local step) the replies are gradients. With FedAvg the aggregate is their
mean and the new global model ``W - lr * mean_gradient``, FedSGD as McMahan et al. (2017) define
it; with a server optimiser each reply first becomes the weights its client's step would give,
``W - lr * gradient``, which the strategy then aggregates as it aggregates FedAvg clients. In
FedAvg mode (several local steps) the replies are the clients' new weights.

With ``secure_aggregation`` the observer gets one update per round, the example-weighted mean of
the replies (:func:`secure_aggregate`): a simulation of exactly what a server behind secure
aggregation learns, since it sees the weighted sum and the total number of examples.
"""

from __future__ import annotations

import logging
import time
from typing import Callable, Iterable, Sequence

import numpy as np
import torch
from flwr.app import Array, ArrayRecord, ConfigRecord, Message, MessageType, MetricRecord, RecordDict
from flwr.serverapp import Grid
from flwr.serverapp.strategy import FedAdagrad, FedAdam, FedAvg, FedAvgM, FedYogi
from flwr.serverapp.strategy.fedopt import FedOpt
from flwr.serverapp.strategy.strategy_utils import sample_nodes

from fedgraph_sim.config import AGGREGATION_KEYS, RunConfig
from fedgraph_sim.models import build_model
from fedgraph_sim.threat import AGGREGATE, PER_NODE_PREFIX, ClientFailure, CraftedRound, ObservedUpdate

Observer = Callable[[list[ObservedUpdate], list[ClientFailure]], None]
log = logging.getLogger(__name__)

NON_FINITE = "non-finite update"  # how a failure row names a reply left out for NaN or inf
CANARY_CLIENT = "canary-client"  # marks a DP audit's canary client's reply (runtime.canary_clients)
ROLL_CALL_SECONDS = 600.0  # the first message starts every client actor (imports included)


def last_line(text: str) -> str:
    """The last non-empty line of a message (a Ray traceback's is the error itself)."""
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return lines[-1] if lines else ""


def secure_aggregate(updates: list[ObservedUpdate]) -> ObservedUpdate:
    """The one update a secure-aggregation server observes: the weighted mean of ``updates``
    (weights = examples, as FedAvg aggregates), over the union of the clients' batches."""
    total = sum(u.num_examples for u in updates)
    first = updates[0]
    returned = {k: sum(np.asarray(u.returned[k], np.float64) * u.num_examples for u in updates) / total
                for k in first.returned}
    metrics = {"num-examples": total, "clients": len(updates)}
    for key in {k for u in updates for k in u.metrics if k.startswith("defense-")}:
        metrics[key] = max(u.metrics[key] for u in updates if key in u.metrics)  # the worst client
    crafted = first.crafted  # a malicious server knows which slot each member's weights filled
    if crafted is not None:
        crafted = crafted.for_clients({k: slot for u in updates for k, slot in u.crafted.slots.items()})
    return ObservedUpdate(round=first.round, client_key=AGGREGATE,
                          global_weights=first.global_weights if crafted is None else crafted.base,
                          returned=returned, kind=first.kind, num_examples=total, metrics=metrics,
                          lr=first.lr, local_steps=first.local_steps,
                          batch_size=sum(u.batch_size for u in updates), same_batch=first.same_batch,
                          members=tuple(u.client_key for u in updates), crafted=crafted)


def failed(reply: Message) -> bool:
    """A client's own failure report (``clients.turn.failure_reply``): metrics, no arrays."""
    return bool(reply.content["metrics"].get("failed", 0))


def non_finite(reply: Message) -> str | None:
    """The first array of an update holding a NaN or an infinity (a diverged or poisoned client),
    else None. One such value would turn the whole global model into NaN once averaged in."""
    for key, array in reply.content["arrays"].items():
        if not np.isfinite(array.numpy()).all():
            return key
    return None


class Curious:
    """Mixin: the server's eye on every reply, over the Flower strategy it precedes in the MRO."""

    #: In FedSGD mode: True for plain FedAvg, which averages the gradients and takes one step;
    #: a server optimiser instead aggregates the weights each client's step gives.
    averages_gradients: bool = False

    def __init__(self, *, lr: float, local_steps: int, batch_size: int, same_batch: bool = False, run_dir: str = "",
                 observer: Observer | None = None, secure_aggregation: bool = False,
                 audits: Callable[[int], bool] = lambda server_round: True, config_json: str = "",
                 **strategy_kwargs) -> None:
        strategy_kwargs.setdefault("fraction_evaluate", 0.0)
        super().__init__(**strategy_kwargs)
        self.watch(lr=lr, local_steps=local_steps, batch_size=batch_size, same_batch=same_batch, run_dir=run_dir,
                   observer=observer, secure_aggregation=secure_aggregation, audits=audits, config_json=config_json)

    def watch(self, *, lr: float, local_steps: int, batch_size: int, same_batch: bool = False, run_dir: str = "",
              observer: Observer | None = None, secure_aggregation: bool = False,
              audits: Callable[[int], bool] = lambda server_round: True, config_json: str = "") -> None:
        """The server's eye, over a Flower strategy already built (a user's: ``runtime.user_app``):
        what its clients train with, where their audit records go, whom the replies go to, and the
        run's config for a user's ClientApp (``fedgraph_sim.Federation``)."""
        self.config_json = config_json
        self.lr, self.local_steps, self.batch_size = lr, local_steps, batch_size
        self.same_batch = same_batch  # every local step trains the round's one batch
        self.run_dir = str(run_dir)  # clients write their audit records under it
        self.observer, self.secure_aggregation = observer, secure_aggregation
        self.audits = audits  # whether a round's ground truth is read (its clients write audit records)
        self._sent: dict[int, dict[str, np.ndarray]] = {}
        self._partition_of: dict[int, int] = {}  # Flower node id -> the partition it reported
        self.timings = {"first_configure": 0.0, "round_trip": 0.0, "client_compute": 0.0, "attacks": 0.0}
        self._configured_at = 0.0
        self._witnessed = 0  # the last round whose replies the observer has seen

    def configure_train(self, server_round: int, arrays: ArrayRecord, config: ConfigRecord,
                        grid: Grid) -> Iterable[Message]:
        for key, value in self.round_config(server_round, {k: v.numpy().copy() for k, v in arrays.items()}).items():
            config[key] = value
        return super().configure_train(server_round, arrays, config, grid)

    def round_config(self, server_round: int, sent: dict[str, np.ndarray]) -> dict:
        """Remember the arrays sent in ``server_round``; the settings its clients train with."""
        self._sent[server_round] = sent
        self._configured_at = time.time()
        if not self.timings["first_configure"]:
            self.timings["first_configure"] = self._configured_at
        settings = {"lr": self.lr, "local-steps": self.local_steps, "batch-size": self.batch_size,
                    "run-dir": self.run_dir, "audit": self.audits(server_round)}
        if self.config_json:  # a user's ClientApp reads the run's data and seed from it
            settings["fedgraph-config"] = self.config_json
        return settings

    def sent(self, server_round: int) -> dict[str, np.ndarray]:
        """The global arrays sent in ``server_round``."""
        return self._sent[server_round]

    def received(self, server_round: int, node: int, client_key: int,
                 sent: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], CraftedRound | None]:
        """What ``node`` (training ``client_key``) received in ``server_round``: the round's global
        arrays ``sent``, and no crafting (a malicious server's own differ per client:
        ``server.malicious``)."""
        return sent, None

    def partition_of(self, node: int) -> int | None:
        """The partition a Flower node trains (from its replies or the roll call), if known."""
        return self._partition_of.get(node)

    def note_partition(self, node: int, partition: int) -> None:
        """A reply named the partition its node trains."""
        self._partition_of[node] = partition

    def roll_call(self, grid: Grid, timeout: float = ROLL_CALL_SECONDS) -> None:
        """Learn which partition each node trains before round 1, so that a client whose process
        dies in its first turn (a Flower error reply carries no metrics) is named in its row."""
        _, nodes = sample_nodes(grid, self.min_available_nodes, 0)  # waits until they are online
        messages = [Message(RecordDict(), dst_node_id=node, message_type=MessageType.QUERY) for node in nodes]
        for reply in grid.send_and_receive(messages, timeout=timeout):
            if not reply.has_error():
                self._partition_of[reply.metadata.src_node_id] = int(reply.content["metrics"]["partition-id"])

    def _partition_of_reply(self, reply: Message) -> tuple[int, int]:
        """A reply's place in the aggregate: its partition (an error reply's from the roll call),
        then its node."""
        node = reply.metadata.src_node_id
        if not reply.has_error() and "metrics" in reply.content:
            return int(reply.content["metrics"].get("partition-id", -1)), node
        return self._partition_of.get(node, -1), node

    def observe(self, server_round: int, replies: list[Message]) -> tuple[list[ObservedUpdate], list[ClientFailure]]:
        sent = self._sent[server_round]
        kind = "gradient" if self.local_steps == 1 else "weights"
        updates, failures = [], []
        for reply in replies:
            node = reply.metadata.src_node_id
            if reply.has_error():
                failures.append(ClientFailure(server_round, self._partition_of.get(node),
                                              f"Flower error reply from node {node}: {last_line(reply.error.reason)}"))
                continue
            if CANARY_CLIENT in reply.content:  # a DP audit's canary client: aggregated, never attacked
                continue
            metrics = dict(reply.content["metrics"])
            self.note_partition(node, int(metrics["partition-id"]))
            if metrics.get("replaced-process"):
                log.warning("round %d, client %s: its client process died during the turn; the turn ran again "
                            "in the process that replaced it", server_round, metrics["partition-id"])
            if failed(reply):
                failures.append(ClientFailure(server_round, int(metrics["partition-id"]),
                                              str(reply.content["config"]["error"])))
                continue
            if (key := non_finite(reply)) is not None:
                failures.append(ClientFailure(server_round, int(metrics["partition-id"]),
                                              f"{NON_FINITE}: '{key}' holds NaN or inf; left out of the aggregate"))
                continue
            arrays = {k: v.numpy() for k, v in reply.content["arrays"].items()}
            per_node = {k.removeprefix(PER_NODE_PREFIX): v for k, v in arrays.items() if k.startswith(PER_NODE_PREFIX)}
            key = int(metrics["partition-id"])
            weights, crafted = self.received(server_round, node, key, sent)
            updates.append(ObservedUpdate(
                round=server_round, client_key=key, global_weights=weights, crafted=crafted,
                returned={k: v for k, v in arrays.items() if not k.startswith(PER_NODE_PREFIX)}, kind=kind,
                num_examples=int(metrics["num-examples"]), metrics=metrics, lr=self.lr,
                local_steps=self.local_steps, batch_size=self.batch_size, per_node=per_node or None,
                same_batch=self.same_batch))
        updates = sorted(updates, key=lambda u: u.client_key)
        if self.secure_aggregation and updates:
            updates = [secure_aggregate(updates)]
        return updates, failures

    def witness(self, server_round: int, replies: list[Message]) -> list[Message]:
        """The server's eye on a round's replies (timings, then the observer), once per round,
        whether or not the round is aggregated (Flower's DP wrappers, which go around this strategy,
        skip a round with an error reply). Returns the replies an aggregate may take: all but the
        failed turns' (error replies stay, for the aggregator's own rule)."""
        if self._witnessed != server_round:
            self._witnessed = server_round
            self._observe_round(server_round, replies)
        return [r for r in replies if r.has_error() or not failed(r)]

    def _observe_round(self, server_round: int, replies: list[Message]) -> None:
        # Actors train in parallel: a round's compute is its slowest client's.
        compute = max((float(r.content["metrics"].get("train-seconds", 0.0)) for r in replies if not r.has_error()),
                      default=0.0)
        self.witness_observed(compute, *self.observe(server_round, replies))

    def witness_observed(self, compute_seconds: float, updates: list[ObservedUpdate],
                         failures: list[ClientFailure]) -> None:
        """A round's timings, and what the server observed in it handed to the observer."""
        self.timings["round_trip"] += time.time() - self._configured_at
        self.timings["client_compute"] += compute_seconds
        if self.observer is not None:
            start = time.time()
            self.observer(updates, failures)
            self.timings["attacks"] += time.time() - start

    def aggregate_train(self, server_round: int,
                        replies: Iterable[Message]) -> tuple[ArrayRecord | None, MetricRecord | None]:
        replies = list(replies)
        self.witness(server_round, replies)
        replies = [r for r in replies if r.has_error() or not (failed(r) or non_finite(r) is not None)]
        for reply in (r for r in replies if not r.has_error()):  # a leaky client's extra channel is not aggregated
            leaked = [k for k in reply.content["arrays"] if k.startswith(PER_NODE_PREFIX)]
            for key in leaked:
                del reply.content["arrays"][key]
        sent = self._sent[server_round]
        if self.local_steps == 1 and not self.averages_gradients:
            for reply in (r for r in replies if not r.has_error()):  # observed already: now the client's weights
                reply.content["arrays"] = _stepped(sent, reply.content["arrays"], self.lr)
        # Summed in partition order, not arrival order: float sums depend on their order, and an
        # aggregate that changed in its last bits with Ray's scheduling made learning runs differ
        # between runs of the same config (amplified over rounds, e.g. by a 90% pruning threshold).
        replies.sort(key=self._partition_of_reply)
        arrays, metrics = super().aggregate_train(server_round, replies)
        if arrays is not None and self.local_steps == 1 and self.averages_gradients:
            arrays = _stepped(sent, arrays, self.lr)
        self.forget(server_round)
        return arrays, metrics

    def forget(self, server_round: int) -> None:
        """Nothing kept per round once the round is aggregated."""
        self._sent.pop(server_round, None)


def _stepped(weights: dict[str, np.ndarray], gradient: ArrayRecord, lr: float) -> ArrayRecord:
    """``W - lr * gradient``, in the weights' dtype; an array with no gradient (a buffer, such as
    batch norm's running statistics in a user's model) stays as sent."""
    return ArrayRecord({k: Array(np.asarray(w - lr * gradient[k].numpy(), dtype=w.dtype) if k in gradient
                                 else np.asarray(w)) for k, w in weights.items()})


class CuriousFedAvg(Curious, FedAvg):
    averages_gradients = True


class CuriousFedAvgM(Curious, FedAvgM):
    pass


class CuriousFedAdam(Curious, FedAdam):
    pass


class CuriousFedYogi(Curious, FedYogi):
    pass


class CuriousFedAdagrad(Curious, FedAdagrad):
    pass


#: ``aggregation.strategy`` -> the curious strategy (its keys: ``config.AGGREGATION_KEYS``).
STRATEGIES: dict[str, type] = {"fedavg": CuriousFedAvg, "fedavgm": CuriousFedAvgM, "fedadam": CuriousFedAdam,
                               "fedyogi": CuriousFedYogi, "fedadagrad": CuriousFedAdagrad}


def initial_arrays(config: RunConfig, num_features: int, num_classes: int) -> ArrayRecord:
    torch.manual_seed(config.seed)
    model = build_model(config.model, num_features, num_classes)
    return ArrayRecord(model.state_dict())


def make_strategy(config: RunConfig, observer: Observer | None, run_dir: str = "",
                  audits: Callable[[int], bool] = lambda server_round: True, aux_graphs: Sequence = ()) -> Curious:
    """The configured curious strategy (``aggregation``): every client trains every round, or
    Flower samples ``federation.fraction_train`` of the available ones once
    ``federation.min_available`` are connected; ``audits(round)``: whether the round's ground truth
    will be read; ``aux_graphs``: the server's auxiliary graphs, which a malicious server's
    crafting may place its weights on."""
    cls, names = STRATEGIES[config.aggregation.strategy], AGGREGATION_KEYS[config.aggregation.strategy]
    if config.threat.server == "malicious":
        from server.malicious import Malicious
        cls = type(f"Malicious{cls.__name__}", (Malicious, cls), {})
    chosen = {flower: getattr(config.aggregation, ours) for ours, flower in names.items()
              if getattr(config.aggregation, ours) is not None}  # unset: Flower's own default
    if issubclass(cls, FedOpt):
        chosen["eta_l"] = config.train.lr  # the clients' learning rate, which Flower records
    fed = config.federation
    available = fed.min_available or fed.num_clients
    user_clients = config.model_dump_json() if config.federation.client_app else ""
    strategy = cls(lr=config.train.lr, local_steps=config.train.local_steps, batch_size=config.train.batch_size,
                   config_json=user_clients,
                   same_batch=config.train.sampling == "repeat", run_dir=str(run_dir), observer=observer,
                   secure_aggregation=config.threat.secure_aggregation, audits=audits,
                   fraction_train=fed.fraction_train, min_train_nodes=available if fed.fraction_train == 1 else 1,
                   min_available_nodes=available, **chosen)
    if config.threat.server == "malicious":
        from fedgraph_sim.crafting import crafting
        strategy.arm(crafting(config.threat.crafting, aux_graphs, config.train.loss), config.model.model_dump(),
                     config.seed)
    return strategy
