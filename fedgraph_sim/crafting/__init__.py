"""Craftings: the weights a malicious server sends in place of the global model.

An honest-but-curious server sends the model training produced. A malicious one
(``threat.server: malicious``) sends weights of its choosing, within the architecture the clients
run: no new layer, no shape the client code would refuse. A crafting is a module here with a class
registered in :data:`CRAFTINGS`; its docstring names its paper, its idea and its limits. It is used
from both sides of the threat boundary, which is why it lives in the core:

- the server calls :meth:`Crafting.craft` for a round's clients and sends each its part;
- an attack calls :meth:`Crafting.members` on an update whose ``crafted`` names the crafting, and
  reads each member's part as an honest update of a smaller model.
"""

from __future__ import annotations

from typing import ClassVar, Sequence

import numpy as np

from fedgraph_sim.threat import AttackerKnowledge, CraftedRound, ObservedUpdate


class Crafting:
    """One way of crafting a round's weights. Subclasses set ``name`` and ``paper``."""

    name: ClassVar[str]
    paper: ClassVar[str]
    #: True when the crafting places its weights on the server's auxiliary graphs (``aux``).
    needs_aux: ClassVar[bool] = False

    def __init__(self, aux_graphs: Sequence = (), loss: str = "cross_entropy") -> None:
        self.aux_graphs, self.loss = tuple(aux_graphs), loss

    def problem(self, model: dict, clients: int) -> str | None:
        """Why this crafting cannot serve ``clients`` clients of a model of architecture ``model``
        (the ``model`` section's keys), if so: one line, said before anything runs.

        Args:
            model (dict): the ``model`` section (:class:`~fedgraph_sim.config.ModelConfig` dumped).
            clients (int): the clients a round sends crafted weights to.

        Returns:
            The reason, to follow ``threat.crafting: <name>`` in a config error, or None.
        """
        raise NotImplementedError

    def craft(self, weights: dict[str, np.ndarray], model: dict, clients: int,
              seed: int) -> tuple[CraftedRound, list[dict[str, np.ndarray]]]:
        """The round's crafting (``slots`` still empty) and what each of the ``clients`` slots
        receives, given the honest global ``weights`` of a model of architecture ``model``.

        Args:
            weights (dict[str, np.ndarray]): the honest global model's state by name.
            model (dict): the ``model`` section.
            clients (int): the slots to craft, one per client of the round.
            seed (int): seeds whatever the crafting draws (e.g. the initialisation of each part).

        Returns:
            ``(round, parts)``: the :class:`~fedgraph_sim.threat.CraftedRound` and, per slot, a
            full state dict of the honest model's names and shapes.
        """
        raise NotImplementedError

    def members(self, update: ObservedUpdate,
                knowledge: AttackerKnowledge) -> list[tuple[ObservedUpdate, AttackerKnowledge]]:
        """Each member's own update inside ``update`` (one client's reply or a secure aggregate),
        with the knowledge of the model it was computed on.

        Args:
            update (ObservedUpdate): an update whose ``crafted`` names this crafting.
            knowledge (AttackerKnowledge): the attacker's knowledge of the honest model.

        Returns:
            ``(member's update, knowledge of its model)`` per member, in ``client_key`` order.
        """
        raise NotImplementedError


def crafting(name: str, aux_graphs: Sequence = (), loss: str = "cross_entropy") -> Crafting:
    """An instance of the crafting registered as ``name`` (``threat.crafting``).

    Args:
        name (str): a key of :data:`CRAFTINGS`; another raises :class:`KeyError`.
        aux_graphs (Sequence[Data], optional): the server's auxiliary graphs (``aux``).
            (default: ``()``)
        loss (str, optional): the clients' training loss (``train.loss``). (default: ``"cross_entropy"``)
    """
    return CRAFTINGS[name](aux_graphs, loss)


# E402: the craftings subclass Crafting, defined above
from fedgraph_sim.crafting.imprinted_aggregates import ImprintedAggregates  # noqa: E402
from fedgraph_sim.crafting.imprinted_nodes import ImprintedNodes, ImprintedNodesEpoch  # noqa: E402
from fedgraph_sim.crafting.rescaled_layers import RescaledLayers  # noqa: E402
from fedgraph_sim.crafting.separated_clients import SeparatedClients  # noqa: E402

#: ``threat.crafting`` -> its class.
CRAFTINGS: dict[str, type[Crafting]] = {
    c.name: c for c in (SeparatedClients, RescaledLayers, ImprintedNodes, ImprintedNodesEpoch, ImprintedAggregates)}
