"""Canary clients in a simulated federation (Andrew et al., "One-shot Empirical Privacy Estimation
for Federated Learning", ICLR 2024): the included ones reply to every training round beside the
real clients, each with the global weights it was sent moved along its own fixed random direction
by ``canaries.norm`` (at most the clipping norm the round's config asks the clients for, as
Flower's client-side clipping mod would leave it).

They are clients, not the server: they enter at the grid, where replies arrive, so Flower's DP
wrappers clip, average and noise them as any client's, and the curious strategy knows them only by
the ``canary-client`` record its observer skips (it attacks real clients only).
"""

from __future__ import annotations

import copy
from typing import Iterable

import numpy as np
from flwr.app import Array, ArrayRecord, ConfigRecord, Message, MessageType, MetricRecord

from server.strategy import CANARY_CLIENT


class CanaryClientGrid:
    """A Flower grid whose training rounds also get the included canary clients' replies.

    Args:
        grid: the grid the real clients reply through.
        directions: every canary client's unit direction, ``[count, parameters]``.
        names: the parameter names, in the order the directions flatten them.
        included: which canary clients take part (the audit's secret, kept on the clients' side).
        norm: a canary's update norm (``canaries.norm``).
        first_partition: the partition id of canary 0 (after the real clients').
    """

    def __init__(self, grid, directions: np.ndarray, names: list[str], included: np.ndarray, norm: float,
                 first_partition: int) -> None:
        self._grid, self.directions, self.names = grid, directions, names
        self.members = np.flatnonzero(included)
        self.norm, self.first = norm, first_partition

    def __getattr__(self, name: str):
        return getattr(self._grid, name)

    def send_and_receive(self, messages: Iterable[Message], *, timeout: float | None = None) -> Iterable[Message]:
        messages = list(messages)
        replies = list(self._grid.send_and_receive(messages, timeout=timeout))
        train = [m for m in messages if m.metadata.message_type == MessageType.TRAIN]
        real = [r for r in replies if not r.has_error() and "arrays" in r.content]
        if not train or not real:
            return replies
        return replies + self._canary_replies(train[0], real)

    def _canary_replies(self, sent: Message, real: list[Message]) -> list[Message]:
        weights = {k: v.numpy() for k, v in sent.content["arrays"].items()}
        clip = sent.content["config"].get("clipping_norm") if "config" in sent.content else None
        norm = min(self.norm, float(clip)) if clip is not None else self.norm
        examples = max(int(r.content["metrics"]["num-examples"]) for r in real)  # a full client's weight
        sizes = [weights[n].size for n in self.names]
        offsets = np.cumsum([0, *sizes])
        out = []
        for i in self.members:
            reply = copy.deepcopy(real[0])  # a reply's envelope; its arrays and metrics replaced below
            moved = {n: weights[n] + (norm * self.directions[i, offsets[j]:offsets[j + 1]]).reshape(weights[n].shape)
                     .astype(weights[n].dtype) for j, n in enumerate(self.names)}
            reply.content["arrays"] = ArrayRecord({k: Array(np.asarray(moved.get(k, v))) for k, v in weights.items()})
            # the real replies' metric keys (FedAvg aggregates only replies that agree on them)
            metrics = {**dict(real[0].content["metrics"]), "num-examples": examples,
                       "partition-id": self.first + int(i)}
            if "norm_bit" in metrics:  # Flower's adaptive clipping mod: 1 for an update within the clip
                metrics["norm_bit"] = 1
            reply.content["metrics"] = MetricRecord(metrics)
            reply.content[CANARY_CLIENT] = ConfigRecord({"index": int(i)})
            out.append(reply)
        return out
