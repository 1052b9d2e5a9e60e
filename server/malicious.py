"""The malicious server (``threat.server: malicious``): crafted weights in the attacked rounds.

:class:`Malicious` goes before a curious strategy (:mod:`server.strategy`) in the MRO and
overrides two of Flower's hooks. ``configure_train`` sends each client of an attacked round its
own part of a crafting (:mod:`fedgraph_sim.crafting`), one message per client, within the
architecture the clients run; the replies then reach the observer knowing what each client
received. ``aggregate_train`` does not aggregate a crafted round: the replies were computed on
weights no client should train, so the server keeps the honest model it had, and the round costs
the federation one round of progress (the next honest round trains from where it stood).
"""

from __future__ import annotations

from typing import Iterable

import numpy as np
from flwr.app import Array, ArrayRecord, ConfigRecord, Message, MetricRecord, RecordDict
from flwr.serverapp import Grid

from fedgraph_sim.crafting import Crafting
from fedgraph_sim.threat import CraftedRound


class Malicious:
    """Mixin: crafted weights in every round the server attacks (``audits(round)``)."""

    def arm(self, crafting: Crafting, model: dict, seed: int) -> None:
        """Craft with ``crafting`` for a model of architecture ``model`` (the ``model`` section),
        each round's crafting drawn from ``seed`` and the round."""
        self.crafting, self.model_spec, self.crafting_seed = crafting, dict(model), seed
        # round -> its crafting, node -> slot, and each slot's arrays
        self._crafted: dict[int, tuple[CraftedRound, dict[int, int], list[dict[str, np.ndarray]]]] = {}
        self._honest: dict[int, ArrayRecord] = {}

    def configure_train(self, server_round: int, arrays: ArrayRecord, config: ConfigRecord,
                        grid: Grid) -> Iterable[Message]:
        messages = list(super().configure_train(server_round, arrays, config, grid))
        if not messages or not self.audits(server_round):
            return messages
        messages.sort(key=lambda m: self._slot_order(m.metadata.dst_node_id))
        honest = {k: v.numpy() for k, v in arrays.items()}
        crafted, parts = self.crafting.craft(honest, self.model_spec, len(messages),
                                             seed=self.crafting_seed * 100_003 + server_round)
        slots = {m.metadata.dst_node_id: slot for slot, m in enumerate(messages)}
        self._crafted[server_round] = (crafted, slots, parts)
        self._honest[server_round] = arrays
        return [Message(RecordDict({self.arrayrecord_key: ArrayRecord({k: Array(v) for k, v in part.items()}),
                                    self.configrecord_key: m.content[self.configrecord_key]}),
                        message_type=m.metadata.message_type, dst_node_id=m.metadata.dst_node_id)
                for m, part in zip(messages, parts)]

    def _slot_order(self, node: int) -> tuple:
        """Slots follow the partitions the roll call named: Flower draws node ids anew every run,
        and a slot's weights following them made the same config give other rows."""
        partition = self.partition_of(node)
        return (partition is None, node if partition is None else partition)

    def received(self, server_round: int, node: int, client_key: int,
                 sent: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], CraftedRound | None]:
        if server_round not in self._crafted:
            return super().received(server_round, node, client_key, sent)
        crafted, slots, parts = self._crafted[server_round]
        return parts[slots[node]], crafted.for_clients({client_key: slots[node]})

    def aggregate_train(self, server_round: int,
                        replies: Iterable[Message]) -> tuple[ArrayRecord | None, MetricRecord | None]:
        if server_round not in self._crafted:
            return super().aggregate_train(server_round, replies)
        self.witness(server_round, list(replies))  # read, never averaged into the model
        self._crafted.pop(server_round)
        self.forget(server_round)
        return self._honest.pop(server_round), MetricRecord({"crafted-round": 1})
