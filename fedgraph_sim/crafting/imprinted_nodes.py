r"""``imprinted_nodes``: the per-node readout's first layer as an imprint of every node of a batch,
read as an invertible Bloom lookup table: each node's readout row, and which graph it belongs to.

Paper: the imprint module of Fowl, Geiping, Czaja, Goldblum and Goldstein ("Robbing the Fed:
Directly Obtaining Private Data in Federated Learning with Modified Models", ICLR 2022): a linear
layer whose rows all measure one statistic of the input, with increasing thresholds as biases, so
that the difference of two consecutive rows' gradients holds the inputs whose statistic falls
between the thresholds. The reading is the peeling decoder of Goodrich and Mitzenmacher
("Invertible Bloom Lookup Tables", Allerton 2011).

Idea. A per-node readout (GRAIN's victim) feeds its first layer each node's row
:math:`z_n = [x_n \,\|\, h_n]` (its features and its last message-passing state). The crafting
splits the layer's units into :math:`G` groups of :math:`K`; unit :math:`j` of group :math:`g` is

.. math::
    u_{g,j}(z) = \mathrm{ReLU}(a_g^\top z - b_{g,j}), \qquad b_{g,0} < b_{g,1} < \dots < b_{g,K-1},

a random direction :math:`a_g` per group, the thresholds at the quantiles of :math:`a_g^\top z`
over the server's auxiliary graphs (under the round's honest message-passing weights, which it
keeps) and :math:`b_{g,0}` below all of them. The next layer adds the units with one weight
:math:`\alpha` and the last maps that sum to the first logit, so every active unit of node
:math:`n` receives the same loss derivative :math:`w_n`, and

.. math::
    \nabla W_{g,j} - \nabla W_{g,j+1} = \sum_{n:\ b_{g,j} < a_g^\top z_n \le b_{g,j+1}} w_n z_n^\top,
    \qquad \nabla b_{g,j} - \nabla b_{g,j+1} = \sum_{n:\ \dots} w_n :

a table in which every node sits in one cell per group. A cell that holds one distinct row gives
it exactly, :math:`z = S / B`, and removing it from its cells in the other groups may leave them
pure in turn. With :math:`G = 3` the peeling ends with every row once the table has about 1.22
cells per distinct row (Goodrich and Mitzenmacher); GRAIN's width 300 gives 300 cells against
about 180 distinct rows in a batch of 16 Tox21 molecules.

The derivative is the graph's: with the logits pooled over a graph's nodes,
:math:`w_n = \partial L / \partial \mathrm{logit}_g \cdot \gamma\alpha / |V_g|` (mean pooling), the
same for every node of a graph and different between graphs, so a decoded row's weight is
:math:`k\, c_g` with :math:`k` its copies in graph :math:`g`. The server computes the crafted
model's logits on any set of decoded rows, so it checks a proposed graph (rows and copies) against
the weight its loss predicts for either label (:func:`~fedgraph_sim.crafting.imprint_reading.group_graphs`).

Limits. It needs a per-node readout with a hidden layer (GRAIN's victim). Before a pooled readout
the only per-node layers are message-passing ones, whose gradient rows are aggregates
:math:`(\hat A H)_v` without the node's own features, which this reading needs to name the node
types (a table there is not built). The thresholds come from the auxiliary graphs:
nodes unlike them crowd a few cells. Rows shared by several graphs of the batch (the same 2-hop
neighbourhood) decode once, with their graphs' weights summed. It recovers node rows and graph
membership, not edges: a graph is then rebuilt from its nodes' states (GRAIN's blocks). The round
trains nothing (the server discards its replies), and a client sees most of the readout dead on
its data and its weights far from any initialisation (``clients/defenses/crafted_check.py``).

By default it reads one FedSGD gradient, not a FedAvg epoch. The summing unit's weights
:math:`\alpha` are small (one over the units' mean total) and their gradient is the units'
activations, so one SGD step at lr 0.01 moves them 500 to 1500 times their norm and the unit is
dead on every node for the later steps (``experiments/imprinted_nodes_decode.py --local-steps 4``:
only the first step's rows decode, 34 of 178, in float64). A float32 client that returns weights
rounds the table's update away even after one step (its bias moves by 1e-7 to 4e-7 of its norm,
against float32's relative spacing of 6e-8; 0 of 178 rows decode).

``epoch=True`` is a table that outlasts the epoch. Its scales (table, summing unit, last layer)
are free within the function class: a step's relative move is proportional to
:math:`f/s^2` for the table, :math:`f s^2/t^2` for :math:`\alpha` and :math:`t^2/f` for the last
layer (:math:`s` the table's scale, :math:`t` the summing unit's, :math:`f` the logits' spread),
so a tiny spread keeps all three at 1e-7 to 1e-3 per step. Float32 rounding is relative to each
weight, so the table reads only the columns whose table weights are zero, whose update a float32
reply keeps to about 1e-7: each group's statistic is one state column that the crafting makes a
combination of the other state columns (the last layer's last :math:`G` output rows as
combinations of the others, along the auxiliary rows' top principal directions, the layer before
giving up as many units so that the last layer's input stays recoverable), recomputed from them
when read, and a cell's weight comes from its standardized one-hot features,
:math:`\sigma \odot S = B\,(o - \mu)`, not from the bias. The price: the pooled logits barely
differ between graphs, so a graph's weight says only its label and node count, and graphs that
share both are grouped as their union (``group_graphs``' ``merged``), to be rebuilt as one
graph of that many components; and the statistic reads the states only (a
feature column would need a nonzero table weight), so more nodes share a cell than under the
default's random direction over every column (Tox21's first 16 molecules as FedSGD batches of 8:
171 of 178 rows against 173). The scales were chosen on those 16 molecules. The server sends it
as ``threat.crafting: imprinted_nodes_epoch`` (:class:`ImprintedNodesEpoch`).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from fedgraph_sim.crafting import Crafting
from fedgraph_sim.models import build_model
from fedgraph_sim.threat import CraftedRound

#: How far below the auxiliary statistics the first threshold of a group lies, in their ranges:
#: the group's first unit is active on every node, so no node falls outside the table.
_FLOOR = 10.0

#: The decimals the auxiliary statistics are rounded to before the thresholds are placed between
#: their distinct values: one row in several graphs sums its terms in other orders, and values
#: 1e-15 apart would put a threshold on that row's own value, where the client's float32 decides
#: its cell (float32 resolves about 1e-7 of the statistics, which lie within about 0.01 to 50).
_DECIMALS = 5

#: ``epoch``: the table's scale, the summing unit's (its weights' total and its bias) and the pooled
#: logits' spread (in thirds of a logit per std), against 1, 1, 1 for one gradient. Each relative
#: step of one SGD step scales as table ~ spread / table^2, summing unit ~ spread * table^2 / sum^2,
#: last layer ~ sum^2 / spread; these keep all three below 1e-4 to 1e-3 at lr 0.01 on Tox21.
_EPOCH_SCALES = (1e-5, 1e-6, 1e-11)


class ImprintedNodes(Crafting):
    """Every slot receives the same crafted model (see the module's docstring).

    Args:
        aux_graphs (Sequence[Data], optional): the server's auxiliary graphs, where the thresholds
            are placed. (default: ``()``)
        loss (str, optional): the clients' training loss (``train.loss``): under ``bce`` every
            logit carries the sum, so every node's weight is positive. (default: ``"cross_entropy"``)
        groups (int, optional): the table's groups :math:`G`. (default: ``3``)
        epoch (bool, optional): a table that outlasts a FedAvg epoch of a float32 client: read on
            redundant state columns and scaled so that local steps barely move it (the module's
            docstring). (default: :obj:`False`)
    """

    name = "imprinted_nodes"
    paper = "Fowl et al., ICLR 2022 (imprint module); Goodrich and Mitzenmacher, Allerton 2011 (IBLT)"
    needs_aux = True

    def __init__(self, aux_graphs: Sequence = (), loss: str = "cross_entropy", groups: int = 3,
                 epoch: bool = False) -> None:
        super().__init__(aux_graphs, loss)
        self.groups = groups
        self.epoch = epoch

    def problem(self, model: dict, clients: int) -> str | None:
        """Refuses a user's model, a node task and any readout but a per-node MLP pooled by sum or
        mean, and a first readout layer narrower than two units per group.

        Args:
            model (dict): the ``model`` section.
            clients (int): the clients a round sends crafted weights to.
        """
        if model.get("module") is not None:
            return "crafts the bench's GraphClassifier readout; a user's model (model.module) is not one"
        if model.get("task", "graph") != "graph":
            return "needs a graph classifier (model.task: graph)"
        if model.get("readout_placement") != "per_node" or model.get("readout") != "mlp":
            return ("needs a per-node MLP readout (model.readout_placement: per_node, model.readout: mlp): "
                    "a pooled readout mixes a graph's nodes before any layer it can bin")
        if model.get("pool", "mean") not in ("mean", "sum"):
            return f"needs the per-node logits summed or averaged (model.pool is {model.get('pool')})"
        if self.epoch and (model.get("conv", "gcn") != "gcn" or int(model.get("layers", 2)) < 2):
            return "its epoch table needs GCN layers, at least two (model.conv: gcn, model.layers)"
        width = int((model.get("readout_hidden") or [model.get("hidden", 16)])[0])
        if width < 2 * self.groups:
            return f"needs at least {2 * self.groups} units in the readout's first layer (model.readout_hidden)"
        return None

    def craft(self, weights: dict[str, np.ndarray], model: dict, clients: int,
              seed: int) -> tuple[CraftedRound, list[dict[str, np.ndarray]]]:
        """The crafted model (the same for every slot): the honest message-passing layers, the
        readout's first layer as the table, and the later readout layers adding it up.

        Args:
            weights (dict[str, np.ndarray]): the honest global model's state by name.
            model (dict): the ``model`` section (:meth:`problem` None).
            clients (int): the slots to craft.
            seed (int): seeds the groups' directions.

        Raises:
            ValueError: without auxiliary graphs to place the thresholds on.
        """
        if not self.aux_graphs:
            raise ValueError("imprinted_nodes places its thresholds on the server's auxiliary graphs; it has none")
        net = crafted_model(model, weights)
        z = readout_rows(net, self.aux_graphs)
        units = weights["classifier.0.weight"].shape[0]
        bins = units // self.groups
        redundant = None
        if self.epoch:
            weights, redundant = _redundant_columns(weights, model, z.shape[1], self.groups, z)
            z = readout_rows(crafted_model(model, weights), self.aux_graphs)
            directions = np.zeros((self.groups, z.shape[1]))
            directions[np.arange(self.groups), redundant["keep"] + np.arange(self.groups)] = 1.0
        else:
            directions = np.random.default_rng(seed).standard_normal((self.groups, z.shape[1])) / np.sqrt(z.shape[1])
        table, summing, spread = _EPOCH_SCALES if self.epoch else (1.0, 1.0, 1.0)
        first_w, first_b = imprint_table(z @ directions.T, directions, units, bins, table)
        total = np.maximum(z @ first_w.T + first_b, 0).sum(axis=1)
        alpha = summing / total.mean()
        summed = alpha * total + summing  # the next layer's one live unit, always active
        # A graph's weight is its pooled logit's loss derivative over its size: the pooled logits
        # must spread where the sigmoid is steep, or graphs of one size share one weight.
        ends = np.cumsum([g.num_nodes for g in self.aux_graphs])[:-1]
        pooled = np.array([part.mean() for part in np.split(summed, ends)])
        gamma = spread / max(3 * pooled.std(), 1e-12)  # three of their stds to a logit of one
        crafted = {k: np.array(v, copy=True) for k, v in weights.items()}
        crafted["classifier.0.weight"], crafted["classifier.0.bias"] = first_w, first_b
        linears = sorted({k.rsplit(".", 1)[0] for k in weights if k.startswith("classifier.")} - {"classifier.0"},
                         key=lambda name: int(name.split(".")[1]))
        for k, layer in enumerate(linears):
            w, b = np.zeros_like(weights[f"{layer}.weight"]), np.zeros_like(weights[f"{layer}.bias"])
            if k == 0:
                w[0, :self.groups * bins], b[0] = alpha, summing
            elif k < len(linears) - 1:
                w[0, 0] = 1.0
            elif self.loss == "bce":  # pooled logits of 1 +- 1/3 per std: sum_c sigmoid > 1, so w_n > 0
                w[:, 0], b[:] = gamma, 1.0 - gamma * pooled.mean()
            else:
                w[0, 0], b[0] = gamma, -gamma * pooled.mean()
            crafted[f"{layer}.weight"], crafted[f"{layer}.bias"] = w, b
        crafted = {k: v.astype(weights[k].dtype) for k, v in crafted.items()}
        # under bce every weight is positive, so a cell's counts of each feature value and its
        # states before the last (bias-free, linear) layer cannot go negative: the reader's test
        states = _states_view(crafted, model)
        q = z[:, -states.shape[0]:] @ states if states is not None else np.zeros(1)
        positive = self.loss == "bce" and not self.epoch and bool((q >= -1e-8 * np.abs(q).max()).all())
        plan = {"groups": self.groups, "bins": bins, "positive": positive, "states": states is not None,
                "redundant": redundant}
        return CraftedRound(self.name, crafted, {}, plan), [dict(crafted) for _ in range(clients)]



class ImprintedNodesEpoch(ImprintedNodes):
    """``threat.crafting: imprinted_nodes_epoch``: :class:`ImprintedNodes` with ``epoch=True``, the
    table built to outlast a FedAvg epoch of a float32 client (beyond Fowl et al.; the module's
    docstring). It needs at least two GCN layers.

    Args:
        aux_graphs (Sequence[Data], optional): the server's auxiliary graphs. (default: ``()``)
        loss (str, optional): the clients' training loss (``train.loss``). (default: ``"cross_entropy"``)
        groups (int, optional): the table's groups :math:`G`. (default: ``3``)
    """

    name = "imprinted_nodes_epoch"

    def __init__(self, aux_graphs: Sequence = (), loss: str = "cross_entropy", groups: int = 3) -> None:
        super().__init__(aux_graphs, loss, groups, epoch=True)

def _redundant_columns(weights: dict[str, np.ndarray], model: dict, width: int, groups: int,
                       z: np.ndarray) -> tuple[dict[str, np.ndarray], dict]:
    """The last message-passing layer's last ``groups`` output columns made combinations of the
    others (the aux rows' top principal directions), so a decoded row's own columns there follow
    from its other columns, which a float32 weights reply keeps (their table weights are zero).
    The layer before gives up as many units (zero rows, and zero columns in the last layer), so
    the last layer's aggregated input stays exactly recoverable from its state (GRAIN's 1-hop
    check inverts it)."""
    layers = int(model.get("layers", 2))
    key, before = f"convs.{layers - 1}.lin.weight", f"convs.{layers - 2}.lin"
    last = np.array(weights[key], np.float64)
    out = dict(weights)
    for name in (f"{before}.weight", f"{before}.bias"):
        if name in out:
            dead = np.array(out[name], copy=True)
            dead[dead.shape[0] - groups:] = 0.0
            out[name] = dead
    last[:, last.shape[1] - groups:] = 0.0
    start, keep = width - last.shape[0], width - groups
    rest = z[:, start:keep]
    coef = np.linalg.svd(rest - rest.mean(0), full_matrices=False)[2][:groups]
    last[last.shape[0] - groups:] = coef @ last[:last.shape[0] - groups]
    out[key] = last.astype(weights[key].dtype)
    return out, {"start": start, "keep": keep, "coef": coef.tolist()}


def imprint_table(stats: np.ndarray, directions: np.ndarray, units: int, bins: int,
                  scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """The imprint layer's weight ``[units, D]`` and bias ``[units]``: group ``g``'s ``bins``
    units all measure ``directions[g]``, with a first threshold below every auxiliary statistic
    (so no node falls outside the table) and the rest between their distinct values (to
    :data:`_DECIMALS` decimals); the units past ``groups * bins`` stay zero.

    Args:
        stats (np.ndarray): each auxiliary node's statistic per group ``[n, groups]``.
        directions (np.ndarray): each group's direction ``[groups, D]``.
        units (int): the layer's units.
        bins (int): the units of one group.
        scale (float, optional): the table's scale, weights and biases alike. (default: ``1.0``)
    """
    weight, bias = np.zeros((units, directions.shape[1])), np.zeros(units)
    for g in range(len(directions)):
        s = np.round(stats[:, g], _DECIMALS)
        cut = np.concatenate([[s.min() - _FLOOR * (s.max() - s.min()) - 1.0], _thresholds(s, bins - 1)])
        weight[g * bins:(g + 1) * bins] = scale * directions[g]
        bias[g * bins:(g + 1) * bins] = -scale * cut
    return weight, bias


def _thresholds(stats: np.ndarray, count: int) -> np.ndarray:
    """``count`` increasing thresholds near the quantiles of ``stats``, each halfway between two
    distinct values: molecules repeat their rows, and a threshold on a repeated value would leave
    those nodes on the edge of a unit, where the client's float32 rounding decides the cell.

    Args:
        stats (np.ndarray): the statistic of every auxiliary node ``[n]``.
        count (int): the thresholds to place.
    """
    values, counts = np.unique(stats, return_counts=True)
    if len(values) < 2:
        return np.full(count, values[0] + 1.0)  # one value: every cell but the first stays empty
    ranks = np.cumsum(counts)[:-1] / counts.sum()  # the share at or below each gap
    gaps = (values[:-1] + values[1:]) / 2
    chosen: list[int] = []
    for target in np.arange(1, count + 1) / (count + 1):
        left = chosen[-1] + 1 if chosen else 0
        if left >= len(gaps):
            break
        chosen.append(left + int(np.abs(ranks[left:] - target).argmin()))
    cut = gaps[chosen]
    top = values[-1] + 1.0 + np.arange(count - len(cut))  # more cells than gaps: the rest above all
    return np.concatenate([cut, top])


def _states_view(weights: dict[str, np.ndarray], model: dict) -> np.ndarray | None:
    """``P`` with ``h_L P`` the aggregated inputs of the last layer, when that layer is a bias-free
    GCN without an activation after it (GRAIN's): sums of ReLU outputs, never negative; else None."""
    layers = int(model.get("layers", 2))
    if model.get("conv", "gcn") != "gcn" or model.get("conv_bias", True) or model.get("last_activation") is not False:
        return None
    return aggregation_inverse(weights[f"convs.{layers - 1}.lin.weight"])


def aggregation_inverse(weight) -> np.ndarray:
    """``P`` with ``h P`` the aggregated input a bias-free linear layer of ``weight [out, in]``
    (``h = agg W^T``) was applied to: the pseudo-inverse, transposed; used by the crafting, its
    reader and GRAIN's 1-hop bound alike.

    Args:
        weight (array-like): the layer's weight ``[out, in]``.
    """
    return np.linalg.pinv(np.asarray(weight, np.float64)).T


def crafted_model(model: dict, weights: dict[str, np.ndarray]):
    """The classifier of architecture ``model`` holding ``weights``, in float64 and eval mode: what
    a crafting computes its thresholds and scales on.

    Args:
        model (dict): the ``model`` section.
        weights (dict[str, np.ndarray]): its state by name.
    """
    num_features = weights["convs.0.lin.weight"].shape[1] if "convs.0.lin.weight" in weights else None
    if num_features is None:  # other convs name their first linear map otherwise
        first = next(k for k in weights if k.startswith("convs.0.") and k.endswith("weight"))
        num_features = weights[first].shape[1]
    num_classes = weights[max((k for k in weights if k.startswith("classifier.") and k.endswith("weight")),
                              key=lambda k: int(k.split(".")[1]) if k.count(".") > 1 else 0)].shape[0]
    net = build_model(model, num_features, num_classes)
    net.load_state_dict({k: torch.as_tensor(np.asarray(v)) for k, v in weights.items()})
    return net.double().eval()


def readout_rows(net, graphs) -> np.ndarray:
    """Every node's row of the per-node readout, ``[nodes, width]``, in float64.

    Args:
        net (GraphClassifier): a per-node-readout classifier.
        graphs: PyG graphs.
    """
    with torch.no_grad():
        return np.concatenate([net._readout_rows(g.x.double(), net.node_embeddings(g.x.double(), g.edge_index)).numpy()
                               for g in graphs])
