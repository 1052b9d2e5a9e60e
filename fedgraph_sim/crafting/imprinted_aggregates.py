r"""``imprinted_aggregates``: a pooled GCN classifier's first layer as an imprint of every node's
aggregated input :math:`(\hat A X)_v`, the later layers and the head adding it up.

Paper: the imprint module of Fowl, Geiping, Czaja, Goldblum and Goldstein ("Robbing the Fed:
Directly Obtaining Private Data in Federated Learning with Modified Models", ICLR 2022), read as an
invertible Bloom lookup table (Goodrich and Mitzenmacher, Allerton 2011) as ``imprinted_nodes``
reads its own; here placed where a pooled model (PyG's habit: ReLU after every layer, biases,
``global_mean_pool`` or ``global_add_pool``, an MLP head) still has per-node rows, its first GCN
layer :math:`H_1 = \mathrm{ReLU}(\hat A X W_1^\top + b_1)`.

Idea. The first layer's units form :math:`G` groups of :math:`K` thresholds over a random
direction :math:`a_g` of the aggregated input, placed at the quantiles of
:math:`a_g^\top (\hat A X)_v` over the server's auxiliary graphs. Every later layer keeps one live
unit: the second layer's adds the table's units with one weight :math:`\alpha` and a bias of one
(so it is active on every node), each later layer and the head's hidden layers pass it on, and
the last map turns the pooled value into the first logit with slope :math:`\gamma`, a thirtieth of
a logit per standard deviation of the auxiliary graphs' pooled values, centred on 0. Every other unit is
zero and dead. The loss derivative then
reaches the table's units of node :math:`v` as one scalar :math:`c_v` for all of them,

.. math::
    c_v = \alpha\, \gamma\, \frac{\partial \mathcal{L}}{\partial \mathrm{logit}_G}\, \frac{1}{|V_G|}
    \big((\hat A^{\top})^{L-1} \mathbf{1}\big)_v \quad (\text{mean pooling; no } 1/|V_G| \text{ for sum}),

and, with :math:`\nabla W_1` the weight gradient of the first layer,

.. math::
    \nabla W_{g,j} - \nabla W_{g,j+1} = \sum_{v:\ b_{g,j} < a_g^\top (\hat A X)_v \le b_{g,j+1}}
    c_v\, (\hat A X)_v, \qquad \nabla b_{g,j} - \nabla b_{g,j+1} = \sum_{v:\ \dots} c_v :

a cell holding one distinct row gives it exactly, :math:`S / B`, whatever the :math:`c_v`
(``imprint_reading.read_imprints`` peels the table). A row is a node's star: its own features over
:math:`\tilde d_v` and each neighbour's over :math:`\sqrt{\tilde d_u \tilde d_v}`; with a degree
block in the features the star is read from the row (``attacks/grain/imprinted_stars.py``).
Under BCE the first logit's derivative :math:`\sigma(\mathrm{logit}_G) - [y_G = 0]` (its target is
the label's one-hot entry) has the label's sign, so a row's weight does too, and the logits' spread makes the graphs'
derivatives differ: the server computes a proposed graph's weights through the crafted model, and
a graph glued from two graphs' stars has neither one's.

Limits. It needs GCN layers with biases (the thresholds are the first layer's), at least two of
them, and sum or mean pooling (max pooling sends a unit's gradient to one node). A row is a 1-hop
aggregate, not the node's own features, and a row's weight depends on the graph within
:math:`L - 1` hops: the weights tell graphs apart only once a graph is proposed. Rows of nodes
with the same star (in one graph or several) decode once, their weights summed. The round trains
nothing (the server discards its replies), and a client sees every unit but one per layer dead
(``clients/defenses/crafted_check.py``). It reads one FedSGD gradient: a local step moves the
summing unit as it moves ``imprinted_nodes``' (that module's docstring).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from fedgraph_sim.crafting import Crafting
from fedgraph_sim.crafting.imprinted_nodes import crafted_model, imprint_table
from fedgraph_sim.models.convs import gcn_normalised
from fedgraph_sim.threat import CraftedRound

#: The logits' spread over the auxiliary graphs, in logits per standard deviation of the pooled
#: value: enough for graphs to get loss derivatives of their own (a few percent apart), little
#: enough that every derivative stays near its label's (sigma(0) - [y = 0] under BCE), which bounds the
#: weight a node adds to its row (``attacks/grain/imprinted_stars.py``).
_SLOPE = 1 / 30


class ImprintedAggregates(Crafting):
    """Every slot receives the same crafted model (see the module's docstring).

    Args:
        aux_graphs (Sequence[Data], optional): the server's auxiliary graphs, where the thresholds
            are placed. (default: ``()``)
        loss (str, optional): the clients' training loss (``train.loss``). (default: ``"cross_entropy"``)
        groups (int, optional): the table's groups :math:`G`. (default: ``3``)
    """

    name = "imprinted_aggregates"
    paper = "Fowl et al., ICLR 2022 (imprint module); Goodrich and Mitzenmacher, Allerton 2011 (IBLT)"
    needs_aux = True

    def __init__(self, aux_graphs: Sequence = (), loss: str = "cross_entropy", groups: int = 3) -> None:
        super().__init__(aux_graphs, loss)
        self.groups = groups

    def problem(self, model: dict, clients: int) -> str | None:
        """Refuses a user's model, a node task, a per-node readout, max pooling, other layers than
        GCN, GCN layers without biases, a single layer and fewer than two units per group.

        Args:
            model (dict): the ``model`` section.
            clients (int): the clients a round sends crafted weights to.
        """
        if model.get("module") is not None:
            return "crafts the bench's GraphClassifier; a user's model (model.module) is not one"
        if model.get("task", "graph") != "graph":
            return "needs a graph classifier (model.task: graph)"
        if model.get("readout_placement", "after_pool") != "after_pool":
            return "crafts a pooled readout (model.readout_placement: after_pool); imprinted_nodes reads a per-node one"
        if model.get("pool", "mean") not in ("mean", "sum"):
            return (f"needs sum or mean pooling (model.pool is {model.get('pool')}): max sends a unit's gradient "
                    "to one node")
        if model.get("conv", "gcn") != "gcn" or not model.get("conv_bias", True):
            return "needs GCN layers with biases (model.conv: gcn, model.conv_bias: true): the thresholds are biases"
        if int(model.get("layers", 2)) < 2:
            return "needs at least two GCN layers (model.layers): the second adds the first one's table up"
        if int(model.get("hidden", 16)) < 2 * self.groups:
            return f"needs at least {2 * self.groups} units per layer (model.hidden)"
        return None

    def craft(self, weights: dict[str, np.ndarray], model: dict, clients: int,
              seed: int) -> tuple[CraftedRound, list[dict[str, np.ndarray]]]:
        """The crafted model (the same for every slot): the first layer as the table, one live
        unit after it adding it up to the logit.

        Args:
            weights (dict[str, np.ndarray]): the honest global model's state by name.
            model (dict): the ``model`` section (:meth:`problem` None).
            clients (int): the slots to craft.
            seed (int): seeds the groups' directions.

        Raises:
            ValueError: without auxiliary graphs to place the thresholds on.
        """
        if not self.aux_graphs:
            raise ValueError("imprinted_aggregates places its thresholds on the server's auxiliary graphs; it has none")
        z = np.concatenate([aggregated_rows(g.x, g.edge_index).numpy() for g in self.aux_graphs])
        units, width = weights["convs.0.lin.weight"].shape
        bins = units // self.groups
        directions = np.random.default_rng(seed).standard_normal((self.groups, width)) / np.sqrt(width)
        first_w, first_b = imprint_table(z @ directions.T, directions, units, bins)
        alpha = 1.0 / np.maximum(z @ first_w.T + first_b, 0).sum(axis=1).mean()
        crafted = {k: np.zeros_like(np.asarray(v, np.float64)) for k, v in weights.items()}
        crafted["convs.0.lin.weight"], crafted["convs.0.bias"] = first_w, first_b
        crafted["convs.1.lin.weight"][0, :self.groups * bins], crafted["convs.1.bias"][0] = alpha, 1.0
        for layer in range(2, int(model.get("layers", 2))):
            crafted[f"convs.{layer}.lin.weight"][0, 0] = 1.0
        linears = sorted({k.rsplit(".", 1)[0] for k in weights if k.startswith("classifier.")},
                         key=lambda name: int(name.split(".")[1]) if "." in name else 0)
        for layer in linears[:-1]:
            crafted[f"{layer}.weight"][0, 0] = 1.0
        pooled = self._pooled(model, {k: v for k, v in crafted.items()})
        gamma = _SLOPE / max(pooled.std(), 1e-12)
        last = linears[-1]
        # the first logit alone: its derivative sigma(logit) - [y = 0] under bce (softmax - [y = 0]
        # under cross-entropy) has the label's sign; the other logits' would cancel it under bce
        crafted[f"{last}.weight"][0, 0] = gamma
        crafted[f"{last}.bias"][0] = -gamma * pooled.mean()
        crafted = {k: v.astype(np.asarray(weights[k]).dtype) for k, v in crafted.items()}
        plan = {"groups": self.groups, "bins": bins, "table": "convs.0", "alpha": float(alpha),
                "gamma": float(gamma), "logit_spread": _SLOPE}
        return CraftedRound(self.name, crafted, {}, plan), [dict(crafted) for _ in range(clients)]

    def _pooled(self, model: dict, weights: dict[str, np.ndarray]) -> np.ndarray:
        """The head's input (the live unit, pooled) on every auxiliary graph under ``weights``."""
        net = crafted_model(model, weights)
        with torch.no_grad():
            return np.array([float(net.graph_embedding(g.x.double(), g.edge_index, None)[0, 0])
                             for g in self.aux_graphs])


def aggregated_rows(x, edge_index) -> torch.Tensor:
    r"""Every node's aggregated input to a GCN layer, :math:`\hat A X` with
    :math:`\hat A = \tilde D^{-1/2} (A + I) \tilde D^{-1/2}`, in float64: what the first layer's
    weight gradient holds per node (used by the crafting, its reader and the attack alike).

    Args:
        x (Tensor): node features ``[n, F]``.
        edge_index (Tensor): the edges ``[2, E]``, both directions.
    """
    x = torch.as_tensor(x, dtype=torch.float64)
    adj = torch.zeros(x.shape[0], x.shape[0], dtype=torch.float64)
    if edge_index.numel():
        adj[edge_index[0], edge_index[1]] = 1.0
    return gcn_normalised(adj) @ x

