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
the weight its loss predicts for either label (:func:`group_graphs`).

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
share both are grouped as their union (:func:`group_graphs`' ``merged``), to be rebuilt as one
graph of that many components; and the statistic reads the states only (a
feature column would need a nonzero table weight), so more nodes share a cell than under the
default's random direction over every column (Tox21's first 16 molecules as FedSGD batches of 8:
171 of 178 rows against 173). The scales were chosen on those 16 molecules. The server sends it
as ``threat.crafting: imprinted_nodes_epoch`` (:class:`ImprintedNodesEpoch`).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch
from torch import Tensor

from fedgraph_sim.crafting import Crafting
from fedgraph_sim.data.schema import FeatureSchema
from fedgraph_sim.models import build_model, classification_loss
from fedgraph_sim.threat import CraftedRound, ObservedUpdate

#: How far below the auxiliary statistics the first threshold of a group lies, in their ranges:
#: the group's first unit is active on every node, so no node falls outside the table.
_FLOOR = 10.0

#: ``epoch``: the table's scale, the summing unit's (its weights' total and its bias) and the pooled
#: logits' spread (in thirds of a logit per std), against 1, 1, 1 for one gradient. Each relative
#: step of one SGD step scales as table ~ spread / table^2, summing unit ~ spread * table^2 / sum^2,
#: last layer ~ sum^2 / spread; these keep all three below 1e-4 to 1e-3 at lr 0.01 on Tox21.
_EPOCH_SCALES = (1e-5, 1e-6, 1e-11)
#: ``group_graphs``' check tolerance on an ``epoch`` table: an epoch's later steps see a last layer
#: that earlier steps moved by 1e-4 to 1e-3 of its norm (chosen with the scales, on the same 16 molecules).
EPOCH_CHECK_TOL = 3e-3


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
        net = _model(model, weights)
        z = readout_rows(net, self.aux_graphs)
        units = weights["classifier.0.weight"].shape[0]
        bins = units // self.groups
        redundant = None
        if self.epoch:
            weights, redundant = _redundant_columns(weights, model, z.shape[1], self.groups, z)
            z = readout_rows(_model(model, weights), self.aux_graphs)
            directions = np.zeros((self.groups, z.shape[1]))
            directions[np.arange(self.groups), redundant["keep"] + np.arange(self.groups)] = 1.0
        else:
            directions = np.random.default_rng(seed).standard_normal((self.groups, z.shape[1])) / np.sqrt(z.shape[1])
        table, summing, spread = _EPOCH_SCALES if self.epoch else (1.0, 1.0, 1.0)
        stats = z @ directions.T  # [aux nodes, groups]
        first_w, first_b = np.zeros((units, z.shape[1])), np.zeros(units)
        for g in range(self.groups):
            s = stats[:, g]
            floor = s.min() - _FLOOR * (s.max() - s.min()) - 1.0
            cut = np.concatenate([[floor], _thresholds(s, bins - 1)])
            first_w[g * bins:(g + 1) * bins] = table * directions[g]
            first_b[g * bins:(g + 1) * bins] = -table * cut
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


def _thresholds(stats: np.ndarray, count: int) -> np.ndarray:
    """``count`` increasing thresholds near the quantiles of ``stats``, each halfway between two
    distinct values: molecules repeat their rows, and a threshold on a repeated value would leave
    those nodes on the edge of a unit, where the client's float32 rounding decides the cell."""
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


def _model(model: dict, weights: dict[str, np.ndarray]):
    num_features = weights["convs.0.lin.weight"].shape[1] if "convs.0.lin.weight" in weights else None
    if num_features is None:  # other convs name their first linear map otherwise
        first = next(k for k in weights if k.startswith("convs.0.") and k.endswith("weight"))
        num_features = weights[first].shape[1]
    num_classes = weights[max((k for k in weights if k.startswith("classifier.") and k.endswith("weight")),
                              key=lambda k: int(k.split(".")[1]))].shape[0]
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


@dataclass
class NodeImprints:
    """What :func:`read_imprints` decodes: distinct readout ``rows [M, D]``, each with its loss
    ``weights [M]`` (summed over its copies in the batch), and the cells the peeling left
    ``undecoded`` out of ``cells`` holding nodes."""

    rows: Tensor
    weights: Tensor
    cells: int
    undecoded: int


def read_imprints(update: ObservedUpdate, schema: FeatureSchema | None = None, *, tol: float = 1e-3,
                  confirm: int = 1) -> NodeImprints:
    """Peel the table of an ``imprinted_nodes`` round's reply: every cell that holds one distinct
    row gives it, and it leaves its cells in the other groups.

    A cell's row is taken only when its input features decode to valid values of ``schema``
    (when given: the readout input starts with them), its statistic lies in the cell's own
    interval, and its cell in every other group holds nodes; mixtures mostly fail one of these.
    An ``epoch`` table's cell weights come from the features instead of the bias (whose update a
    float32 reply rounds away): ``std * S = B (onehot - mean)`` on a pure cell.

    Args:
        update (ObservedUpdate): one reply (or a secure aggregate) of an ``imprinted_nodes`` round.
        schema (FeatureSchema, optional): the node features, to check a row's first columns; an
            ``epoch`` table needs them standardized. (default: :obj:`None`)
        tol (float, optional): the relative tolerance of those checks and of an empty cell.
            (default: ``1e-3``)
        confirm (int, optional): the fewest groups whose cells must agree on a row for it to be
            taken; the reader tries every level from all groups down to this one, surest first.
            (default: ``1``)

    Raises:
        ValueError: an ``epoch`` table without a standardized ``schema``.
    """
    crafted = update.crafted
    groups, bins = int(crafted.plan["groups"]), int(crafted.plan["bins"])
    used = groups * bins
    weight = torch.as_tensor(np.asarray(crafted.base["classifier.0.weight"], np.float64))[:used]
    cut = -torch.as_tensor(np.asarray(crafted.base["classifier.0.bias"], np.float64))[:used].view(groups, bins)
    directions = weight.view(groups, bins, -1)[:, 0]
    grad_w = update.gradient["classifier.0.weight"][:used].view(groups, bins, -1)
    grad_b = update.gradient["classifier.0.bias"][:used].view(groups, bins)
    # a cell: the difference of consecutive units (the last unit alone is the top cell)
    cell_s = grad_w - torch.cat([grad_w[:, 1:], torch.zeros_like(grad_w[:, :1])], 1)
    cell_b = grad_b - torch.cat([grad_b[:, 1:], torch.zeros_like(grad_b[:, :1])], 1)
    redundant = crafted.plan.get("redundant")
    if redundant is None:
        empty = tol * cell_b.abs().max().clamp_min(1e-300) * 1e-2
        size = cell_b.abs  # what an occupied cell holds above ``empty``

        def cell_weight(g: int, j: int) -> Tensor | None:
            return cell_b[g, j].clone() if cell_b[g, j].abs() > empty else None

        def row(S: Tensor, b: Tensor) -> Tensor:
            return S / b
    else:
        if schema is None or not schema.standardized:
            raise ValueError("an epoch table's cells are weighed by their standardized features; give their schema")
        coef = torch.tensor(redundant["coef"], dtype=torch.float64)
        start, keep = int(redundant["start"]), int(redundant["keep"])
        empty = tol * float(cell_s[..., :keep].abs().max()) * 1e-2

        def size() -> Tensor:
            return cell_s[..., :keep].abs().amax(2)

        def cell_weight(g: int, j: int) -> Tensor | None:
            if float(cell_s[g, j, :keep].abs().max()) <= empty:
                return None
            b, residual = _feature_weight(cell_s[g, j], schema)
            return torch.tensor(b, dtype=torch.float64) if residual <= tol and b != 0 else None

        def row(S: Tensor, b: Tensor) -> Tensor:
            z = S / b
            z[keep:] = coef @ z[start:keep]  # the redundant columns, whose own weights float32 rounded
            return z
    occupied = int((size() > empty).sum())
    view = _positive_view(crafted, schema) if crafted.plan.get("positive") else None
    rows, weights = [], []
    level = groups
    while level >= confirm:
        # the surest rows first: those whose cells agree in the most groups; a weaker level is
        # tried only once no row of a surer one is left, and one taken row sends it back up
        taken = False
        for g, j in torch.nonzero(size() > empty).tolist():
            b = cell_weight(g, j)  # the cell is emptied below
            if b is None:
                continue  # emptied earlier in this sweep, or (epoch) not one row
            z = row(cell_s[g, j], b)
            where = _cells(z, directions, cut)
            if where[g] != j:
                continue
            if bool((size()[torch.arange(groups), where] <= empty).any()):
                continue
            found = [cell_weight(g2, int(j2)) for g2, j2 in enumerate(where.tolist())]
            agree = sum(b2 is not None and float((row(cell_s[g2, where[g2]], b2) - z).abs().max())
                        <= tol * float(z.abs().max()) for g2, b2 in enumerate(found))
            if agree < level:
                continue
            if schema is not None and not _valid_features(z[:schema.width], schema, tol):
                continue
            if view is not None:  # no cell may be left with a negative count or state
                rest = view(cell_s[torch.arange(groups), where] - b * z, cell_b[torch.arange(groups), where] - b)
                if float(rest.min()) < -tol * float(view((b * z).unsqueeze(0), b.view(1)).abs().max()):
                    continue
            rows.append(z)
            weights.append(b)
            for g2, j2 in enumerate(where.tolist()):
                cell_s[g2, j2] -= b * z
                cell_b[g2, j2] -= b
            taken = True
            if level < groups:
                break
        level = groups if taken else level - 1
    undecoded = int((size() > empty).sum())
    if not rows:
        return NodeImprints(torch.zeros(0, weight.size(1), dtype=torch.float64), torch.zeros(0, dtype=torch.float64),
                            occupied, undecoded)
    return NodeImprints(torch.stack(rows), torch.stack(weights), occupied, undecoded)


def _feature_weight(S: Tensor, schema: FeatureSchema) -> tuple[float, float]:
    """``(B, residual)``: the weight of a cell holding one distinct row from its standardized one-hot
    columns alone, ``std * S = B (onehot - mean)``, the hot column per block being the one whose
    sign differs; the residual (relative to ``B``) is near zero only for such a cell."""
    mean, std = (torch.tensor(v, dtype=torch.float64) for v in (schema.mean, schema.std))
    live = std > 0
    v = S[:schema.width] * std
    best = (0.0, float("inf"))
    for sign in (1.0, -1.0):  # B's sign: the hot columns carry it, the others its opposite
        onehot = torch.zeros_like(v)
        for cols in schema.slices().values():
            onehot[cols.start + int((sign * v[cols]).argmax())] = 1.0
        d = (onehot - mean)[live]
        b = float((v[live] * d).sum() / (d * d).sum())
        residual = float((v[live] - b * d).abs().max()) / max(abs(b), 1e-300)
        best = min(best, (b, residual), key=lambda pair: pair[1])
    return best


def _positive_view(crafted: CraftedRound, schema: FeatureSchema | None):
    """``view(S [k, D], B [k]) -> [k, *]``: what no cell of positive weights can have negative,
    the counts of each feature value (``schema``'s one-hot columns, when given) and the last
    layer's aggregated inputs (``plan["states"]``)."""
    width = crafted.base["classifier.0.weight"].shape[1]
    parts = []
    if schema is not None and schema.standardized:
        mean, std = (torch.tensor(v, dtype=torch.float64) for v in (schema.mean, schema.std))
        live = std > 0
        parts.append(lambda S, B: (S[:, :schema.width] * std + B.unsqueeze(1) * mean)[:, live])
    elif schema is not None:
        parts.append(lambda S, B: S[:, :schema.width])
    if crafted.plan.get("states"):
        weights = {k: crafted.base[k] for k in crafted.base if k.startswith("convs.")}
        last = max(int(k.split(".")[1]) for k in weights)
        P = torch.as_tensor(aggregation_inverse(weights[f"convs.{last}.lin.weight"]))
        parts.append(lambda S, B: S[:, width - P.shape[0]:] @ P)
    if not parts:
        return None
    return lambda S, B: torch.cat([f(S, B) for f in parts], 1)


def _cells(z: Tensor, directions: Tensor, cut: Tensor) -> Tensor:
    """The cell of row ``z`` in every group: the last threshold its statistic exceeds."""
    stat = directions @ z
    return (torch.searchsorted(cut, stat.unsqueeze(1), right=False).squeeze(1) - 1).clamp_min(0)


def _valid_features(x: Tensor, schema: FeatureSchema, tol: float) -> bool:
    encoded = schema.encode(schema.decode(x.unsqueeze(0))).to(x.dtype)[0]
    return bool((encoded - x).abs().max() <= tol * max(1.0, float(x.abs().max())))


@dataclass
class ImprintedGraph:
    """A graph :func:`group_graphs` proposes: indices into the decoded rows (a row several graphs
    share is in each), each row's copies in this graph, the labels whose predicted weight matched,
    the graph's per-node weight ``c``, and how many graphs of that label and size it holds (their
    disjoint union, under ``group_graphs``' ``merged``)."""

    rows: list[int]
    copies: list[int]
    labels: tuple[int, ...]
    weight: float
    graphs: int = 1


def group_graphs(imprints: NodeImprints, net, loss: str, batch_size: int, labels: Sequence[int], *,
                 sizes: Sequence[int] | None = None, max_copies: int = 12, shared_copies: int = 4,
                 tol: float = 3e-4, check_tol: float | None = None,
                 merged: int = 1) -> tuple[list[ImprintedGraph], list[int]]:
    r"""Group decoded rows into graphs by their weights.

    Rows whose weights are whole multiples of one base weight ``c`` form a cluster. A row that
    several graphs share carries the sum of their weights, :math:`\sum_g k_g c_g`: it is offered
    to the clusters whose bases decompose it (two or three of them, ``k_g <= shared_copies``). A
    cluster, with the fewest of its offered rows that pass, is accepted as a graph when the crafted
    model's loss on those rows (with those copies, pooled as the model pools) gives every node the
    weight ``c`` for some label: the check that decides, since it depends on every row and copy of
    the graph. The likeliest decomposition of each shared row is offered first; a cluster still
    without a graph is then offered every decomposition and the rows that form a cluster of their
    own and joined no graph, with any number of copies their weight allows (a row shared by more
    graphs than three). Each accepted graph's share then leaves the rows it took, and the rows
    with weight left are grouped again, until a pass accepts no graph: a row shared by four graphs
    decomposes once two of them are taken (48 to 51 of 96 Tox21 graphs grouped exactly).

    Args:
        imprints (NodeImprints): the decoded rows.
        net (GraphClassifier): the crafted model (float64), whose readout gives a row's logit.
        loss (str): the training loss (``train.loss``).
        batch_size (int): the graphs of the batch (the loss is their mean).
        labels (Sequence[int]): the labels to try.
        sizes (Sequence[int], optional): the node counts a graph may have (the threat's node-count
            hint), or None for any. (default: :obj:`None`)
        max_copies (int, optional): the most copies of one row in a graph. (default: ``12``)
        shared_copies (int, optional): the most copies of a shared row in one of its graphs.
            (default: ``4``)
        tol (float, optional): relative tolerance of a multiple and of the check: about 1.5 times
            the largest spread of one graph's weight over its rows that a float32 client's batch
            of 16 Tox21 molecules showed (2.1e-4). (default: ``3e-4``)
        check_tol (float, optional): the check's own tolerance, when wider: a FedAvg epoch's
            later steps see a last layer that earlier steps moved, by 1e-4 to 1e-3 of its norm
            under an ``epoch`` table. (default: ``tol``)
        merged (int, optional): the most graphs one proposal may hold. Graphs of one label and
            node count whose pooled logits are equal share their per-node weight ``c``, so their
            rows form one cluster; with ``merged = m`` a cluster of :math:`m n` node copies that
            fails as one graph is checked as :math:`m` graphs of :math:`n` (each node's weight is
            then :math:`m` times the one graph's), and proposed as their disjoint union. An
            ``epoch`` table's tiny logit spread makes such clusters common. (default: ``1``)

    Returns:
        ``(graphs, rows left)``: the accepted graphs and the rows none took.
    """
    w = imprints.weights.numpy()
    residual, graphs = w.copy(), []
    floor = 0.25 * float(np.abs(w).min()) if len(w) else 0.0  # below any graph's weight
    while True:  # the accepted graphs' shares leave the rows they share; the rest is grouped again
        live = [r for r in range(len(w)) if residual[r] > floor]
        new = _group_pass(imprints.rows, residual, live, net, loss, batch_size, labels, sizes, max_copies,
                          shared_copies, tol, check_tol or tol, merged)
        if not new:
            break
        for graph in new:
            for r, k in zip(graph.rows, graph.copies):
                residual[r] -= k * graph.weight
        graphs += new
    taken = {r for g in graphs for r in g.rows}
    return graphs, [r for r in range(len(w)) if r not in taken]


def _group_pass(rows: Tensor, w: np.ndarray, live: list[int], net, loss: str, batch_size: int, labels, sizes,
                max_copies: int, shared_copies: int, tol: float, check_tol: float,
                merged: int = 1) -> list[ImprintedGraph]:
    """One pass of :func:`group_graphs` over the ``live`` rows, with weights ``w``."""
    clusters = [(c, [live[i] for i in idx], copies) for c, idx, copies in _clusters(w[live], max_copies, tol)]
    bases = np.array([c for c, _, _ in clusters])
    offers: dict[int, list[list[tuple[int, int]]]] = {i: [[], []] for i in range(len(clusters))}
    for row in live:  # cluster -> [(row, copies) of the likeliest decomposition, of the others]
        for rank, parts in enumerate(_decompositions(w[row], bases, shared_copies, tol)):
            for cluster, copies in parts:
                offers[cluster][min(rank, 1)].append((row, copies))

    def complete(i: int, extra: list[tuple[int, int]], most: int) -> ImprintedGraph | None:
        """Cluster ``i`` with the fewest of ``extra`` (at most ``most``) that pass the loss check."""
        c, own_rows, copies = clusters[i]
        own = list(zip(own_rows, copies))
        extra = [(r, k) for r, k in dict.fromkeys(extra) if r not in own_rows]
        for m, size in itertools.product(range(1, merged + 1), range(min(most, len(extra)) + 1)):
            for chosen in itertools.combinations(extra, size):  # one graph first, then m of total / m nodes
                members = own + list(chosen)
                if len({r for r, _ in members}) < len(members):
                    continue  # one row offered twice
                total = sum(k for _, k in members)
                if total % m or (sizes is not None and total // m not in sizes):
                    continue
                matched = _matching_labels(rows[[r for r, _ in members]], [k for _, k in members], c,
                                           net, loss, batch_size, labels, check_tol, graphs=m)
                if matched:
                    return ImprintedGraph([r for r, _ in members], [k for _, k in members], matched, float(c),
                                          graphs=m)
        return None

    found: dict[int, ImprintedGraph] = {}
    for i in range(len(clusters)):  # the likeliest decompositions of the shared rows first
        if (graph := complete(i, offers[i][0][:10], 10)) is not None:
            found[i] = graph
    taken = {r for g in found.values() for r in g.rows}
    # a row shared by more graphs than a decomposition covers is a cluster of its own that no graph took
    alone = [members[0] for _, members, _ in clusters if len(members) == 1 and members[0] not in taken]
    for i in range(len(clusters)):  # then any decomposition, and those rows
        if i in found:
            continue
        c = clusters[i][0]
        wider = [(r, k) for r in alone for k in range(1, shared_copies + 1) if k * c < w[r] * (1 + tol)]
        if (graph := complete(i, (offers[i][0] + offers[i][1] + wider)[:20], 3)) is not None:
            found[i] = graph
    return [found[i] for i in sorted(found)]


def _clusters(w: np.ndarray, max_copies: int, tol: float) -> list[tuple[float, list[int], list[int]]]:
    """``(base, rows, copies)``: from the smallest weight up, the rows left that are whole multiples
    of it."""
    left = sorted(range(len(w)), key=lambda i: abs(w[i]))
    out = []
    while left:
        c = w[left[0]]
        ratio = w[left] / c
        copies = np.rint(ratio)
        take = (np.abs(ratio - copies) <= tol * np.maximum(1.0, copies)) & (copies >= 1) & (copies <= max_copies)
        take[0] = True
        out.append((float(c), [left[i] for i in np.nonzero(take)[0]], [int(copies[i]) for i in np.nonzero(take)[0]]))
        left = [left[i] for i in np.nonzero(~take)[0]]
    return out


def _decompositions(weight: float, bases: np.ndarray, most: int, tol: float) -> list[list[tuple[int, int]]]:
    r"""Every way to write ``weight`` as :math:`\sum k_i c_i` over two or three distinct bases,
    ``1 <= k_i <= most``, within ``tol``."""
    out = []
    multiples = [(i, k, k * c) for i, c in enumerate(bases) for k in range(1, most + 1) if abs(k * c) < abs(weight)]
    for n in (2, 3):
        for combo in itertools.combinations(multiples, n):
            gap = abs(sum(v for _, _, v in combo) - weight)
            if len({i for i, _, _ in combo}) == n and gap <= tol * abs(weight):
                out.append((n, gap, [(i, k) for i, k, _ in combo]))
    return [parts for _, _, parts in sorted(out, key=lambda o: o[:2])]  # the fewest graphs, then the closest


def _matching_labels(rows: Tensor, copies: list[int], c: float, net, loss: str, batch_size: int,
                     labels: Sequence[int], tol: float, graphs: int = 1) -> tuple[int, ...]:
    """The labels for which the crafted model's loss gives every node of this graph the weight
    ``c`` (the derivative at its readout's first unit); under ``bce`` the crafting makes that
    derivative the same for every label. With ``graphs = m`` the rows are checked as ``m`` graphs
    of equal size and pooled logit (the rows' pooled one): each node's weight is ``m`` times what
    one graph of all of them would give it."""
    counts = torch.tensor(copies, dtype=torch.float64)
    shift = torch.zeros(len(copies), dtype=torch.float64, requires_grad=True)
    first = net.classifier[0](rows)
    first = torch.cat([first[:, :1] + shift.unsqueeze(1), first[:, 1:]], 1)
    pooled = (counts.unsqueeze(1) * net.classifier[1:](first)).sum(0, keepdim=True)
    if net.pool == "mean":
        pooled = pooled / counts.sum()
    out = []
    for label in labels:
        value = classification_loss(pooled, torch.tensor([label]), loss) / batch_size
        (grad,) = torch.autograd.grad(value, shift, retain_graph=True)
        if bool(((graphs * grad / counts - c).abs() <= tol * abs(c)).all()):  # each copy's own derivative
            out.append(int(label))
    return tuple(out)
