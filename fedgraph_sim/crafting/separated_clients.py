r"""``separated_clients``: each client of a round computes on its own channels, so a secure aggregate
is the sum of updates the server can pull apart.

Paper: the model-inconsistency attack on secure aggregation (Pasquini, Francati and Ateniese,
"Eluding Secure Aggregation in Federated Learning via Model Inconsistency", ACM CCS 2022) sends
each client its own model; there, all but one target client get a model whose gradient is zero,
so the aggregate is the target's update, one client per round. Here every client of the round is
a target at once: the channels of each message-passing layer and of the readout's first layer are
split into ``S`` groups (``S`` = the round's clients), and client ``c`` receives weights that are
zero outside its group ``c``.

Idea. Write a GCN layer's weight as blocks over the groups. Client ``c`` receives
:math:`W_1[c, :]` (its group's rows of layer 1), :math:`W_k[c, c]` for the later layers, the rows
of group ``c`` of the readout's first layer (over the node's input features and its own group's
channels) and the columns of group ``c`` of the readout's second layer (a linear readout: its
columns of group ``c``); every other block is zero, and the layers after that are shared. Another
client ``d`` then has zero activations on group ``c`` (ReLU of zero), and since
:math:`\mathrm{ReLU}'(0) = 0` in PyTorch, a zero gradient on every block of group ``c``. So each block of the aggregate

.. math::
    \bar g[c] = \frac{n_c}{\sum_d n_d}\, g_c[c]

is client ``c``'s own gradient of a model ``S`` times narrower (width ``hidden // S``; the
readout's first layer, if it is an MLP, ``readout_hidden[0] // S``), which the server knows: it drew each group from
that narrower model's own initialisation. The tensors after the readout's first layer are shared
and their gradients stay mixed; an attack compares only the separated ones.

Limits. The members' models are ``S`` times narrower than the honest one, so a reconstruction
attack meets the narrow-model limits (GRAIN's Table 11: width 32 rebuilds fewer molecules than 300,
none above 25 atoms). It separates clients, not the graphs of one client's batch, and it needs
GCN layers without attention or skip terms. A crafted round does not train: the server discards
its replies and keeps the honest model. A client sees a model most of whose units are exactly dead
on its own data, which a client-side check flags (``clients/crafted_check.py``).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import torch

from fedgraph_sim.crafting import Crafting
from fedgraph_sim.models import build_model
from fedgraph_sim.threat import AGGREGATE, AttackerKnowledge, CraftedRound, ObservedUpdate


class SeparatedClients(Crafting):
    """Each slot receives the weights of its own channel group (see the module's docstring)."""

    name = "separated_clients"
    paper = "Pasquini, Francati and Ateniese, CCS 2022 (model inconsistency)"

    def problem(self, model: dict, clients: int) -> str | None:
        """Refuses a user's model, a conv other than single-head GCN without skips, a node task,
        ``pool: flatten``, and more clients than the narrowest split layer has channels.

        Args:
            model (dict): the ``model`` section.
            clients (int): the clients a round sends crafted weights to.
        """
        if model.get("module") is not None:
            return "separates the channels of the bench's GraphClassifier; a user's model (model.module) is not one"
        if model.get("conv", "gcn") != "gcn" or model.get("heads", 1) != 1 or model.get("residual", False):
            return f"needs GCN layers without heads or skips (model.conv is {model.get('conv', 'gcn')})"
        if model.get("task", "graph") != "graph":
            return "needs a graph classifier (model.task: graph)"
        if model.get("pool") == "flatten":
            return "needs a pooling or per-node readout, not pool: flatten"
        widths = _widths(model)
        if min(widths) // clients < 1:
            return (f"splits the model's channels among the round's {clients} clients; the narrowest layer "
                    f"has {min(widths)} (model.hidden, model.readout_hidden)")
        return None

    def craft(self, weights: dict[str, np.ndarray], model: dict, clients: int,
              seed: int) -> tuple[CraftedRound, list[dict[str, np.ndarray]]]:
        """The round's crafting and each slot's weights: its group's blocks from a model ``clients``
        times narrower (initialised with seed ``seed * 1009 + slot``), zero elsewhere, and the
        tensors after the readout's first layer shared (slot 0's narrow model). ``base`` holds
        every slot's blocks at once; ``weights`` only give the names, shapes and widths.

        Args:
            weights (dict[str, np.ndarray]): the honest global model's state by name.
            model (dict): the ``model`` section (a GCN graph classifier, :meth:`problem` None).
            clients (int): the slots to craft.
            seed (int): the round's seed for the narrow models' initialisations.
        """
        num_features = weights["convs.0.lin.weight"].shape[1]
        layout = _Layout(model, num_features, clients)
        num_classes = weights[layout.final].shape[0]
        narrow = []
        for slot in range(clients):
            with torch.random.fork_rng():
                torch.manual_seed(seed * 1009 + slot)  # each group: the narrow model's own initialisation
                narrow.append({k: v.numpy() for k, v in
                               build_model(layout.narrow_model(), num_features, num_classes).state_dict().items()})
        base = {k: np.zeros_like(v) for k, v in weights.items()}
        base.update({name: narrow[0][name] for name in layout.shared})  # the same for every client
        parts = []
        for slot in range(clients):
            part = {k: base[k].copy() if k in layout.shared else np.zeros_like(v) for k, v in weights.items()}
            for name, (rows, cols) in layout.blocks(slot).items():
                index = np.ix_(*_rows_cols(part[name], rows, cols))
                part[name][index] = base[name][index] = narrow[slot][name]
            parts.append(part)
        plan = {"clients": clients, "hidden": layout.hidden, "readout_width": layout.readout}
        return CraftedRound(self.name, base, {}, plan), parts

    def members(self, update: ObservedUpdate,
                knowledge: AttackerKnowledge) -> list[tuple[ObservedUpdate, AttackerKnowledge]]:
        """Each member's update of the narrow model: its slot's blocks of the sent base and of the
        returned arrays (only the separated tensors). For a secure aggregate the returned blocks
        are scaled by the member count, which undoes the mean's weight when the members' batches
        are equal, and the batch size and example count are split evenly.

        Args:
            update (ObservedUpdate): one client's reply or a secure aggregate of a crafted round.
            knowledge (AttackerKnowledge): the attacker's knowledge of the honest model.
        """
        crafted = update.crafted
        layout = _Layout(knowledge.model, knowledge.num_features, int(crafted.plan["clients"]))
        narrow_knowledge = replace(knowledge, model=layout.narrow_model())
        count = len(crafted.slots)
        aggregate = update.client_key == AGGREGATE
        scale = count if aggregate else 1  # the mean's weight of one member's equal batch, undone
        batch_size = update.batch_size // count if aggregate else update.batch_size
        out = []
        for key, slot in sorted(crafted.slots.items()):
            blocks = layout.blocks(slot)
            sent = {k: _take(v, *blocks[k]) if k in blocks else np.asarray(v) for k, v in crafted.base.items()}
            returned = {k: _take(np.asarray(update.returned[k], np.float64), *block) * scale
                        for k, block in blocks.items()}
            member = ObservedUpdate(
                round=update.round, client_key=key, global_weights=sent, returned=returned, kind=update.kind,
                num_examples=max(1, round(update.num_examples / count)), metrics={}, lr=update.lr,
                local_steps=update.local_steps, batch_size=batch_size, same_batch=update.same_batch)
            out.append((member, narrow_knowledge))
        return out


def _widths(model: dict) -> list[int]:
    """The widths split among the clients: the message-passing layers' and, with an MLP readout,
    its first layer's."""
    hidden = int(model.get("hidden", 16))
    if model.get("readout", "linear") != "mlp":
        return [hidden]
    return [hidden, int((model.get("readout_hidden") or [hidden])[0])]


def _rows_cols(array: np.ndarray, rows, cols) -> tuple:
    """Index lists for ``np.ix_``: all columns when ``cols`` is None, and a vector's one axis."""
    rows = np.arange(array.shape[0]) if rows is None else rows
    if array.ndim == 1:
        return (rows,)
    return rows, np.arange(array.shape[1]) if cols is None else cols


def _take(array: np.ndarray, rows, cols) -> np.ndarray:
    return array[np.ix_(*_rows_cols(array, rows, cols))]


class _Layout:
    """Which rows and columns of each tensor belong to a slot's group, for a GCN per-node or pooled
    MLP-readout classifier split among ``clients`` slots."""

    def __init__(self, model: dict, num_features: int, clients: int) -> None:
        self.model, self.num_features = dict(model), num_features
        widths = _widths(model)
        self.hidden = widths[0] // clients
        self.mlp = len(widths) == 2
        self.readout = widths[-1] // clients if self.mlp else 0
        self.layers = int(model.get("layers", 2))
        self.bias = bool(model.get("conv_bias", True))
        self.concat = model.get("readout_input", "last") == "concat_input"
        self.readout_hidden = list(model.get("readout_hidden") or [int(model.get("hidden", 16))])
        if self.mlp:  # the readout's linears: classifier.0, .2, ..., the final one last
            linears = [f"classifier.{2 * j}" for j in range(len(self.readout_hidden) + 1)]
        else:
            linears = ["classifier"]
        self.final = f"{linears[-1]}.weight"
        separated = self.blocks(0)  # every slot's blocks lie in the same tensors
        self.shared = [n for lin in linears for n in (f"{lin}.weight", f"{lin}.bias") if n not in separated]

    def narrow_model(self) -> dict:
        if not self.mlp:
            return dict(self.model, hidden=self.hidden)
        return dict(self.model, hidden=self.hidden, readout_hidden=[self.readout, *self.readout_hidden[1:]])

    def blocks(self, slot: int) -> dict[str, tuple]:
        """``name -> (rows, cols)`` of slot ``slot``'s group (None: every row or column)."""
        h = np.arange(slot * self.hidden, (slot + 1) * self.hidden)
        r = np.arange(slot * self.readout, (slot + 1) * self.readout)
        out: dict[str, tuple] = {"convs.0.lin.weight": (h, None)}
        for k in range(1, self.layers):
            out[f"convs.{k}.lin.weight"] = (h, h)
        if self.bias:
            out.update({f"convs.{k}.bias": (h, None) for k in range(self.layers)})
        first = self.num_features if self.concat else 0
        readout_columns = np.concatenate([np.arange(first), first + h])
        if not self.mlp:
            out["classifier.weight"] = (None, readout_columns)
            return out
        out["classifier.0.weight"] = (r, readout_columns)
        out["classifier.0.bias"] = (r, None)
        out["classifier.2.weight"] = (None, r)
        return out
